#pragma once
#include <string>
#include <string_view>

namespace opforge {

/// Lower-case hex SHA-256 of `data` (OpenSSL).
std::string sha256_hex(std::string_view data);

}  // namespace opforge
