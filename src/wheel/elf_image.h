#pragma once
/// An ELF file in memory, opened with libelf; shared by the wheel/ sources that read ELF (not part
/// of the public API).
#include <gelf.h>
#include <libelf.h>

#include <memory>
#include <string>
#include <string_view>

#include "util/error.h"

namespace opforge::wheel {

class ElfImage {
 public:
  /// bad_input when `bytes` is no ELF file libelf can read.
  static Result<std::unique_ptr<ElfImage>> open(std::string_view bytes);
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  Elf* get() const { return elf_; }

 private:
  explicit ElfImage(std::string_view bytes) : copy_(bytes) {}
  std::string copy_;  ///< elf_memory wants a mutable buffer; it only reads from it
  Elf* elf_ = nullptr;
};

}  // namespace opforge::wheel
