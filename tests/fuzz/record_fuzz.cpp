// libFuzzer harness for the build-record reader: any bytes, as `opforge verify RECORD` and the
// build's reuse check read them. parse() must return a Record or an error, never throw, crash or
// recurse without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "record/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = opforge::record::parse("fuzz.opforge-record.json", text);
  if (record) {
    // What readers do with a parsed record: render it again, ask for its commit, compare it.
    auto again = opforge::record::parse("again.json", opforge::record::render(*record));
    (void)opforge::record::source_commit("fuzz.opforge-record.json", *record);
    if (again) (void)opforge::record::differences(*record, *again);
  }
  return 0;
}
