/* GSSAPI for Debian's static libgit2 in the platform wheel: no static Kerberos library exists, so
 * every call fails with GSS_S_FAILURE and libgit2 reports that Negotiate authentication is not
 * available (other HTTP authentication and SSH are unaffected). */
#include <stddef.h>

typedef unsigned int OM_uint32;
#define GSS_S_FAILURE (13u << 16)

void* GSS_C_NT_HOSTBASED_SERVICE = NULL;

static OM_uint32 fail(OM_uint32* minor) {
  if (minor) *minor = 0;
  return GSS_S_FAILURE;
}

OM_uint32 gss_delete_sec_context(OM_uint32* m, void* c, void* t) { (void)c, (void)t; return fail(m); }
OM_uint32 gss_display_status(OM_uint32* m, OM_uint32 s, int t, void* o, OM_uint32* c, void* b) {
  (void)s, (void)t, (void)o, (void)c, (void)b;
  return fail(m);
}
OM_uint32 gss_import_name(OM_uint32* m, void* b, void* t, void* n) { (void)b, (void)t, (void)n; return fail(m); }
OM_uint32 gss_indicate_mechs(OM_uint32* m, void* s) { (void)s; return fail(m); }
OM_uint32 gss_init_sec_context(OM_uint32* m, void* a, void* b, void* c, void* d, OM_uint32 e, OM_uint32 f, void* g,
                               void* h, void* i, void* j, OM_uint32* k, OM_uint32* l) {
  (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)i, (void)j, (void)k, (void)l;
  return fail(m);
}
OM_uint32 gss_release_buffer(OM_uint32* m, void* b) { (void)b; return fail(m); }
OM_uint32 gss_release_name(OM_uint32* m, void* n) { (void)n; return fail(m); }
OM_uint32 gss_release_oid_set(OM_uint32* m, void* s) { (void)s; return fail(m); }
