#include "util/hash.h"

#include <openssl/evp.h>

namespace opforge {

struct Sha256::Context {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> md{EVP_MD_CTX_new()};
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) { EVP_DigestInit_ex(ctx_->md.get(), EVP_sha256(), nullptr); }
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) { EVP_DigestUpdate(ctx_->md.get(), data.data(), data.size()); }

std::string Sha256::finish_raw() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx_->md.get(), digest, &len);
  return std::string(reinterpret_cast<char*>(digest), len);
}

std::string Sha256::finish_hex() { return to_hex(finish_raw()); }

std::string sha256_raw(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.finish_raw();
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256_raw(data)); }

std::string to_hex(std::string_view raw) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace opforge
