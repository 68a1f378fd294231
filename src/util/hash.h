#pragma once
/// SHA-256, the one hash opforge uses (record outputs, wheel RECORD, cache keys), on OpenSSL.
#include <memory>
#include <string>
#include <string_view>

namespace opforge {

/// An incremental SHA-256: feed the data in pieces (a zip entry as it inflates, a file in
/// chunks), then take the digest once.
class Sha256 {
 public:
  Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();
  void update(std::string_view data);
  /// The raw 32-byte digest; the hasher is spent afterwards.
  std::string finish_raw();
  /// Lower-case hex of the digest; the hasher is spent afterwards.
  std::string finish_hex();

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

/// The raw 32-byte SHA-256 of `data`.
std::string sha256_raw(std::string_view data);
/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);
/// Lower-case hex of raw bytes.
std::string to_hex(std::string_view raw);

}  // namespace opforge
