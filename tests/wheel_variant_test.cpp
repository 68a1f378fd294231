#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "probe/fake_machine.h"
#include "test_util.h"
#include "util/hash.h"
#include "util/strings.h"
#include "wheel/index.h"
#include "wheel/internal.h"
#include "wheel/variant.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

namespace opforge::wheel {
namespace {

using test_util::data;

FatbinImage image(FatbinImage::Kind kind, int arch, char suffix = 0) {
  FatbinImage i;
  i.kind = kind;
  i.arch = arch;
  i.suffix = suffix;
  return i;
}

constexpr auto elf = FatbinImage::Kind::elf;
constexpr auto ptx = FatbinImage::Kind::ptx;

ElfInfo cuda_lib(std::vector<FatbinImage> fatbin, bool torch_cxx = true) {
  ElfInfo info;
  info.fatbin = std::move(fatbin);
  if (torch_cxx) info.unversioned_undefined = {"_ZN2at6native5emptyEv"};
  return info;
}

std::vector<std::string> strs(const std::vector<VariantProperty>& ps) {
  std::vector<std::string> out;
  for (auto& p : ps) out.push_back(p.str());
  return out;
}

// The properties come from the binaries: a cubin is <arch>_real, plain PTX <arch>_virtual, the
// toolkit the lower bound, torch's C++ ABI the torch release.
TEST(WheelVariant, PropertiesFromTheBinaries) {
  auto d = variant_properties(
      {{"x/_lib/a.so", cuda_lib({image(elf, 80), image(elf, 90), image(ptx, 90)})}, {"x/__init__.so", ElfInfo{}}},
      {"13.0.88", "2.15.0+cu130"});
  EXPECT_EQ(strs(d.properties),
            (std::vector<std::string>{"abi_dependency :: torch :: 2.15", "nvidia :: cuda_version_lower_bound :: 13.0",
                                      "nvidia :: sm_arch :: 80_real", "nvidia :: sm_arch :: 90_real",
                                      "nvidia :: sm_arch :: 90_virtual"}));
  EXPECT_TRUE(d.notes.empty());
  // Its label is variantlib's: sha256 of the sorted properties, 8 hex digits.
  EXPECT_EQ(make_variant(d.properties).label, "fc8700fe");
}

TEST(WheelVariant, WhatTheSchemaCannotSayIsNoted) {
  auto d = variant_properties({{"a.so", cuda_lib({image(elf, 90, 'a'), image(ptx, 90, 'a'), image(elf, 80)}, false)},
                               {"b.so", cuda_lib({image(elf, 90, 'a'), image(elf, 100, 'f')}, false)}},
                              {"13.0", ""});
  EXPECT_EQ(strs(d.properties),
            (std::vector<std::string>{"nvidia :: cuda_version_lower_bound :: 13.0", "nvidia :: sm_arch :: 90_real"}));
  auto joined = strings::join(d.notes, "\n");
  EXPECT_NE(joined.find("sm_90a: written as 90_real"), std::string::npos) << joined;
  EXPECT_NE(joined.find("compute_90a: not written"), std::string::npos) << joined;
  EXPECT_NE(joined.find("sm_100f: written as 100_real"), std::string::npos) << joined;
  EXPECT_NE(joined.find("80_real: not written: not every CUDA library"), std::string::npos) << joined;

  // The stable C ABI alone names no release; no GPU code and no torch: nothing to say.
  ElfInfo stable;
  stable.unversioned_undefined = {"aoti_torch_empty_strided"};
  auto s = variant_properties({{"s.so", stable}}, {"13.0", "2.15.0"});
  EXPECT_TRUE(s.properties.empty());
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("stable C ABI"), std::string::npos);
  EXPECT_TRUE(variant_properties({{"p.so", ElfInfo{}}}, {"13.0", "2.15.0"}).properties.empty());
}

// variant.json is byte for byte what variantlib 0.2.2 writes for the same variant
// (tests/data/variants/variant.json: its make_variant_dist_info output).
TEST(WheelVariant, DistInfoJsonIsVariantlibs) {
  auto v = make_variant({{"nvidia", "sm_arch", "90_virtual"},
                         {"nvidia", "sm_arch", "80_real"},
                         {"abi_dependency", "torch", "2.15"},
                         {"nvidia", "sm_arch", "90_real"},
                         {"nvidia", "cuda_version_lower_bound", "13.0"}});
  EXPECT_EQ(variant_dist_info_json(v), data("variants/variant.json"));
  auto back = parse_variants(data("variants/variant.json"));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front(), v);
  // The index's file merges variants, sorted by label, each once.
  auto w = make_variant({{"nvidia", "sm_arch", "100_real"}});
  auto index = parse_variants(variants_index_json({w, v, w}));
  ASSERT_TRUE(index);
  ASSERT_EQ(index->size(), 2u);
  EXPECT_EQ((*index)[0].label < (*index)[1].label, true);
}

TEST(WheelVariant, BadJsonIsNamed) {
  EXPECT_FALSE(parse_variants("nope"));
  EXPECT_FALSE(parse_variants("{}"));
  auto bad_ns = parse_variants(R"({"providers": {}, "variants": {"abc": {"nvidia": {"sm_arch": ["90_real"]}}}})");
  ASSERT_FALSE(bad_ns);
  EXPECT_NE(bad_ns.error().message.find("no provider declares"), std::string::npos);
  auto bad_value = parse_variants(R"({"providers": {"n": {}}, "variants": {"abc": {"n": {"f": ["A"]}}}})");
  ASSERT_FALSE(bad_value);
  EXPECT_NE(bad_value.error().message.find("'n :: f :: A'"), std::string::npos);
  EXPECT_FALSE(parse_variants(R"({"providers": {}, "variants": {"Bad-Label": {}}})"));
}

TEST(WheelVariant, FileNamesCarryTheLabel) {
  auto v = parse_wheel_filename("x-1.0-py3-none-linux_x86_64-fc8700fe.whl");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->variant, "fc8700fe");
  EXPECT_EQ(v->build, "");
  EXPECT_EQ(v->tags(), "py3-none-linux_x86_64");
  auto b = parse_wheel_filename("x-1.0-1-py3-none-any-0abc.whl");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->build, "1");
  EXPECT_EQ(b->variant, "0abc");
  auto plain = parse_wheel_filename("x-1.0-1-py3-none-any.whl");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->variant, "");
  EXPECT_FALSE(parse_wheel_filename("x-1.0-py3-none-any-Bad.whl"));
}

/// `init`: tiny_scale/__init__.py, which tells two builds of one file name apart.
Packed plain_wheel(const std::string& init = "X = 1\n") {
  Spec s;
  s.name = "tiny-scale";
  s.version = "0.1.0";
  s.summary = "tiny";
  s.description = "tiny\n";
  s.source_date_epoch = 1700000000;
  s.files = {{"tiny_scale/__init__.py", init, 0644}, {"tiny_scale/run.sh", "#!/bin/sh\n", 0755}};
  auto p = pack(s);
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}

// The variant wheel is the plain one plus variant.json, its label in the name; it verifies, the
// same inputs give the same bytes, and a wrong label is a problem verify names.
TEST(WheelVariant, VariantWheelFromThePlainOne) {
  auto plain = plain_wheel();
  auto v = make_variant({{"nvidia", "sm_arch", "90_real"}});
  auto made = make_variant_wheel(plain.filename, plain.bytes, v, 1700000000);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(made->filename, "tiny_scale-0.1.0-py3-none-any-" + v.label + ".whl");
  EXPECT_TRUE(verify_bytes(made->filename, made->bytes).ok())
      << strings::join(verify_bytes(made->filename, made->bytes).problems, "\n");
  EXPECT_EQ(wheel_variant_json(made->bytes), variant_dist_info_json(v));
  EXPECT_EQ(wheel_metadata(made->bytes), wheel_metadata(plain.bytes));
  auto again = make_variant_wheel(plain.filename, plain.bytes, v, 1700000000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->bytes, made->bytes);
  auto entries = read_archive(made->bytes);
  ASSERT_TRUE(entries);
  for (auto& e : *entries)
    if (e.path == "tiny_scale/run.sh") {
      EXPECT_EQ(e.mode & 0777, 0755u);
    }

  auto wrong = verify_bytes("tiny_scale-0.1.0-py3-none-any-abcd.whl", made->bytes);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(strings::join(wrong.problems, "\n").find("labels its variant '" + v.label + "', the file name 'abcd'"),
            std::string::npos);
  auto missing = verify_bytes("tiny_scale-0.1.0-py3-none-any-abcd.whl", plain.bytes);
  EXPECT_NE(strings::join(missing.problems, "\n").find("variant.json: missing"), std::string::npos);
  EXPECT_FALSE(make_variant_wheel(made->filename, made->bytes, v, 1700000000));
}

// The index serves {name}-{version}-variants.json, listed on the project's pages, and drops it with
// the last variant wheel of that version.
TEST(WheelVariant, IndexListsTheVariantsOfEachVersion) {
  auto plain = plain_wheel();
  auto a = make_variant({{"nvidia", "sm_arch", "90_real"}}), b = make_variant({{"nvidia", "sm_arch", "80_real"}});
  auto va = *make_variant_wheel(plain.filename, plain.bytes, a, 1700000000);
  auto vb = *make_variant_wheel(plain.filename, plain.bytes, b, 1700000000);
  probe::FakeMachine w;
  w.fs.add_file("/dist/" + plain.filename, plain.bytes);
  w.fs.add_file("/dist/" + va.filename, va.bytes);
  w.fs.add_file("/dist/" + vb.filename, vb.bytes);
  w.fs.add_file("/dist/tiny_scale-0.0.9-variants.json", "stale");
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  auto json = w.fs.read_file("/dist/tiny_scale-0.1.0-variants.json");
  ASSERT_TRUE(json);
  EXPECT_EQ(*json, variants_index_json({a, b}));
  EXPECT_EQ(w.fs.type_of("/dist/tiny_scale-0.0.9-variants.json"), probe::FileType::none);
  auto page = *w.fs.read_file("/dist/simple/tiny-scale/index.html");
  EXPECT_NE(page.find("tiny_scale-0.1.0-variants.json#sha256=" + sha256_hex(*json)), std::string::npos) << page;
  EXPECT_NE(page.find(va.filename), std::string::npos);

  ASSERT_TRUE(w.fs.remove_all("/dist/" + va.filename));
  ASSERT_TRUE(w.fs.remove_all("/dist/" + vb.filename));
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(w.fs.type_of("/dist/tiny_scale-0.1.0-variants.json"), probe::FileType::none);
}

// Each variant label gets an index that plain pip reads: its wheel under the plain wheel's name. A
// variant wheel made from the plain wheel beside it is that plain wheel (a link, no copy); one
// whose plain wheel holds another build (another cell's, merged without its own plain wheel) is
// copied under the plain name beside its index. Same wheels, same bytes; what is gone is removed.
TEST(WheelVariant, EachVariantHasAnIndexPipReads) {
  auto plain = plain_wheel(), other = plain_wheel("X = 2\n");
  ASSERT_EQ(plain.filename, other.filename);
  auto a = make_variant({{"nvidia", "sm_arch", "80_real"}}), b = make_variant({{"nvidia", "sm_arch", "90_real"}});
  auto va = *make_variant_wheel(plain.filename, plain.bytes, a, 1700000000);
  auto vb = *make_variant_wheel(other.filename, other.bytes, b, 1700000000);
  probe::FakeMachine w;
  w.fs.add_file("/dist/" + plain.filename, plain.bytes);
  w.fs.add_file("/dist/" + va.filename, va.bytes);
  w.fs.add_file("/dist/" + vb.filename, vb.bytes);
  w.fs.add_file("/dist/variants/0000dead/simple/index.html", "stale");
  w.fs.add_file("/dist/variants/" + b.label + "/tiny_scale-0.0.9-py3-none-any.whl", "stale");
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));

  EXPECT_EQ(variant_index_path(a.label), "variants/" + a.label + "/simple");
  const std::string meta = sha256_hex(*wheel_metadata(plain.bytes));
  const auto link = [&](const std::string& href, const std::string& sha) {
    return "    <a href=\"" + href + "#sha256=" + sha + "\" data-dist-info-metadata=\"sha256=" + meta +
           "\" data-core-metadata=\"sha256=" + meta + "\">" + plain.filename + "</a><br>\n";
  };
  const std::string pa = *w.fs.read_file("/dist/variants/" + a.label + "/simple/tiny-scale/index.html");
  EXPECT_EQ(pa, simple_project_page("tiny-scale", {{plain.filename, sha256_hex(plain.bytes), meta, plain.bytes.size(),
                                                    "../../../../" + plain.filename}}));
  EXPECT_NE(pa.find(link("../../../../" + plain.filename, sha256_hex(plain.bytes))), std::string::npos) << pa;
  EXPECT_EQ(w.fs.type_of("/dist/variants/" + a.label + "/" + plain.filename), probe::FileType::none);
  EXPECT_EQ(*w.fs.read_file("/dist/variants/" + a.label + "/simple/index.html"), simple_root_page({"tiny-scale"}));

  const std::string pb = *w.fs.read_file("/dist/variants/" + b.label + "/simple/tiny-scale/index.html");
  EXPECT_NE(pb.find(link("../../" + plain.filename, sha256_hex(vb.bytes))), std::string::npos) << pb;
  EXPECT_EQ(*w.fs.read_file("/dist/variants/" + b.label + "/" + plain.filename), vb.bytes);
  EXPECT_EQ(*w.fs.read_file("/dist/variants/" + b.label + "/" + plain.filename + ".metadata"),
            *wheel_metadata(vb.bytes));
  const std::string jb = *w.fs.read_file("/dist/variants/" + b.label + "/simple/tiny-scale/index.json");
  EXPECT_NE(jb.find("\"url\": \"../../" + plain.filename + "\""), std::string::npos) << jb;
  EXPECT_EQ(w.fs.type_of("/dist/variants/0000dead"), probe::FileType::none);
  EXPECT_EQ(w.fs.type_of("/dist/variants/" + b.label + "/tiny_scale-0.0.9-py3-none-any.whl"), probe::FileType::none);

  const auto pages = [&] {
    std::string all;
    for (auto& l : {a.label, b.label})
      for (auto& f : {"simple/index.json", "simple/tiny-scale/index.html", "simple/tiny-scale/index.json"})
        all += *w.fs.read_file("/dist/variants/" + l + "/" + f);
    return all + *w.fs.read_file("/dist/variants/" + b.label + "/" + plain.filename);
  };
  const std::string first = pages();
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(pages(), first);

  // verify: the variant indexes serve each variant wheel's files; a copy replaced by other bytes,
  // a page that lists nothing, are named.
  EXPECT_EQ(*check_variants_index(w.fs, "/dist"), std::vector<std::string>{});
  const std::string copy = "/dist/variants/" + b.label + "/" + plain.filename;
  w.fs.add_file(copy, plain.bytes);
  EXPECT_EQ(*check_variants_index(w.fs, "/dist"),
            std::vector<std::string>{vb.filename + ": variants/" + b.label + "/simple/tiny-scale/ lists " +
                                     plain.filename + " with sha256 " + sha256_hex(vb.bytes) + ", " + copy + " has " +
                                     sha256_hex(plain.bytes) + " (`opforge index /dist` writes it again)"});
  w.fs.add_file("/dist/variants/" + a.label + "/simple/tiny-scale/index.html", simple_project_page("tiny-scale", {}));
  auto two = check_variants_index(w.fs, "/dist");
  ASSERT_EQ(two->size(), 2u);
  EXPECT_NE(strings::join(*two, "\n")
                .find(va.filename + ": variants/" + a.label + "/simple/tiny-scale/ (the index plain pip reads"),
            std::string::npos)
      << strings::join(*two, "\n");
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(*check_variants_index(w.fs, "/dist"), std::vector<std::string>{});
  EXPECT_EQ(pages(), first);

  // A label that is a path of its own ("..": [0-9a-z._]+ allows it) gets no index: nothing is
  // written outside variants/, the plain wheel stays as it was.
  Variant up = make_variant({{"nvidia", "sm_arch", "70_real"}});
  up.label = "..";
  auto vu = make_variant_wheel(other.filename, other.bytes, up, 1700000000);
  ASSERT_TRUE(vu) << vu.error().message;
  ASSERT_EQ(vu->filename, "tiny_scale-0.1.0-py3-none-any-...whl");
  w.fs.add_file("/dist/" + vu->filename, vu->bytes);
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(*w.fs.read_file("/dist/" + plain.filename), plain.bytes);
  EXPECT_EQ(pages(), first);
  ASSERT_TRUE(w.fs.remove_all("/dist/" + vu->filename));
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));

  ASSERT_TRUE(w.fs.remove_all("/dist/" + vb.filename));
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(w.fs.type_of("/dist/variants/" + b.label), probe::FileType::none);
  EXPECT_EQ(w.fs.type_of("/dist/variants/" + a.label + "/simple/tiny-scale/index.html"), probe::FileType::regular);
  ASSERT_TRUE(w.fs.remove_all("/dist/" + va.filename));
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(w.fs.type_of("/dist/variants"), probe::FileType::none);
}

// verify of a wheelhouse: the variants.json files must say what the wheels' variant.json files say,
// naming the wheel and the property.
TEST(WheelVariant, AnIndexThatDisagreesIsNamed) {
  auto plain = plain_wheel();
  auto a = make_variant({{"nvidia", "sm_arch", "90_real"}});
  auto va = *make_variant_wheel(plain.filename, plain.bytes, a, 1700000000);
  probe::FakeMachine w;
  w.fs.add_file("/dist/" + plain.filename, plain.bytes);
  w.fs.add_file("/dist/" + va.filename, va.bytes);
  auto none = check_variants_index(w.fs, "/dist");
  ASSERT_TRUE(none);
  EXPECT_EQ(*none,
            (std::vector<std::string>{
                va.filename + ": variants/" + a.label + "/simple/tiny-scale/ (the index plain pip reads for variant '" +
                    a.label + "') does not list " + plain.filename + " (`opforge index /dist` writes it again)",
                va.filename + ": variant '" + a.label + "', but tiny_scale-0.1.0-variants.json is missing"}));
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  EXPECT_EQ(*check_variants_index(w.fs, "/dist"), std::vector<std::string>{});
  Variant lying = a;
  lying.properties = {{"nvidia", "sm_arch", "80_real"}};
  w.fs.add_file("/dist/tiny_scale-0.1.0-variants.json", variants_index_json({lying}));
  auto problems = check_variants_index(w.fs, "/dist");
  ASSERT_TRUE(problems);
  EXPECT_EQ(*problems,
            (std::vector<std::string>{va.filename +
                                          ": its variant.json says 'nvidia :: sm_arch :: 90_real', "
                                          "tiny_scale-0.1.0-variants.json does not (variant '" +
                                          a.label + "')",
                                      va.filename +
                                          ": tiny_scale-0.1.0-variants.json says 'nvidia :: sm_arch :: 80_real', its "
                                          "variant.json does not (variant '" +
                                          a.label + "')"}));
}

// variantlib 0.2.2 (the draft's reference, pinned in scripts/deps) reads what opforge writes: the
// variant.json of each variant wheel, its label, and the index's variants.json byte for byte
// (tests/wheel_tools/check_variants.py).
TEST(WheelVariant, VariantlibAgrees) {
  const std::filesystem::path source = OPFORGE_SOURCE_DIR;
  const auto python = source / ".venv-tools" / "bin" / "python";
  const auto dir = std::filesystem::path(OPFORGE_BUILD_DIR) / "wheel_variants";
  std::filesystem::remove_all(dir);
  auto m = probe::real_machine();
  auto plain = plain_wheel();
  ASSERT_TRUE(m.fs.create_directories(dir / "dist"));
  ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / plain.filename, plain.bytes));
  for (auto props : {std::vector<VariantProperty>{{"nvidia", "sm_arch", "90_real"},
                                                  {"nvidia", "sm_arch", "90_virtual"},
                                                  {"nvidia", "cuda_version_lower_bound", "13.0"},
                                                  {"abi_dependency", "torch", "2.15"}},
                     std::vector<VariantProperty>{{"abi_dependency", "torch", "2.15"}},
                     std::vector<VariantProperty>{{"abi_dependency", "torch", "2.14"}}}) {
    auto made = make_variant_wheel(plain.filename, plain.bytes, make_variant(props), 1700000000);
    ASSERT_TRUE(made) << made.error().message;
    ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / made->filename, made->bytes));
  }
  ASSERT_TRUE(write_simple_index(m.fs, dir / "dist"));
  // The files stay for a look (or a run by hand with another Python) when variantlib is missing.
  if (std::system((python.string() + " -c 'import variantlib' >/dev/null 2>&1").c_str()) != 0)
    OPFORGE_SKIP_UNLESS_CI(python.string() + " has no variantlib: run scripts/deps");
  const std::string cmd = python.string() + " " + (source / "tests/wheel_tools/check_variants.py").string() + " " +
                          (dir / "dist").string() + " > " + (dir / "log.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::slurp(dir / "log.txt");
}

// pip (no variant support) installs from the same index: it reads the wheel's METADATA from the
// .metadata file the page names (PEP 658, from a file:// index too) and takes the plain wheel.
TEST(WheelVariant, PipTakesThePlainWheelAndReadsItsMetadataFile) {
  const std::filesystem::path source = OPFORGE_SOURCE_DIR;
  const auto pip = source / ".venv-tools" / "bin" / "pip";
  if (!std::filesystem::exists(pip)) OPFORGE_SKIP_UNLESS_CI(pip.string() + " is missing: run scripts/deps");
  const auto dir = std::filesystem::path(OPFORGE_BUILD_DIR) / "wheel_variants_pip";
  std::filesystem::remove_all(dir);
  auto m = probe::real_machine();
  auto plain = plain_wheel();
  auto made = make_variant_wheel(plain.filename, plain.bytes, make_variant({{"nvidia", "sm_arch", "90_real"}}), 1);
  ASSERT_TRUE(made);
  ASSERT_TRUE(m.fs.create_directories(dir / "dist"));
  ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / plain.filename, plain.bytes));
  ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / made->filename, made->bytes));
  ASSERT_TRUE(write_simple_index(m.fs, dir / "dist"));
  const std::string cmd = pip.string() + " download -v --no-deps --no-cache-dir --disable-pip-version-check " +
                          "--index-url file://" + (dir / "dist/simple").string() + " tiny-scale==0.1.0 -d " +
                          (dir / "got").string() + " > " + (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::slurp(dir / "log.txt");
  const auto log = testing::slurp(dir / "log.txt");
  EXPECT_NE(log.find(plain.filename + ".metadata"), std::string::npos) << log;
  EXPECT_TRUE(std::filesystem::exists(dir / "got" / plain.filename)) << log;
  EXPECT_FALSE(std::filesystem::exists(dir / "got" / made->filename)) << log;
}

// Plain pip, pointed at a variant's index, downloads that variant's bytes by the project's name
// alone: the plain wheel itself for the variant made from it, the copy for the other.
TEST(WheelVariant, PipInstallsEachVariantByNameFromItsIndex) {
  const std::filesystem::path source = OPFORGE_SOURCE_DIR;
  const auto pip = source / ".venv-tools" / "bin" / "pip";
  if (!std::filesystem::exists(pip)) OPFORGE_SKIP_UNLESS_CI(pip.string() + " is missing: run scripts/deps");
  const auto dir = std::filesystem::path(OPFORGE_BUILD_DIR) / "wheel_variants_pip_indexes";
  std::filesystem::remove_all(dir);
  auto m = probe::real_machine();
  auto plain = plain_wheel(), other = plain_wheel("X = 2\n");
  auto a = make_variant({{"nvidia", "sm_arch", "80_real"}}), b = make_variant({{"nvidia", "sm_arch", "90_real"}});
  auto va = *make_variant_wheel(plain.filename, plain.bytes, a, 1700000000);
  auto vb = *make_variant_wheel(other.filename, other.bytes, b, 1700000000);
  ASSERT_TRUE(m.fs.create_directories(dir / "dist"));
  for (auto* p : {&plain, &va, &vb}) ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / p->filename, p->bytes));
  ASSERT_TRUE(write_simple_index(m.fs, dir / "dist"));
  for (auto [label, want] : {std::pair{a.label, &plain.bytes}, std::pair{b.label, &vb.bytes}}) {
    const auto got = dir / ("got-" + label);
    const std::string cmd = pip.string() + " download --no-deps --no-cache-dir --disable-pip-version-check " +
                            "--index-url file://" + (dir / "dist" / variant_index_path(label)).string() +
                            " tiny-scale -d " + got.string() + " > " + (dir / "log.txt").string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::slurp(dir / "log.txt");
    EXPECT_EQ(testing::slurp(got / plain.filename), *want) << label << ": " << testing::slurp(dir / "log.txt");
  }
}

}  // namespace
}  // namespace opforge::wheel
