#pragma once
/// A value or an error: the subset of C++23's std::expected that opforge uses, in C++20, so that
/// the project builds with gcc 11 (the default compiler of Ubuntu 22.04 and RHEL 9, whose
/// libstdc++ has no <expected>) and clang 14. Same names and semantics as the standard type, so the
/// code reads the same and can move to std::expected once gcc 12 is the floor.
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

namespace opforge {

/// Thrown by value() on an expected that holds an error: a programming error (callers check
/// first), so it is never caught in opforge.
class bad_expected_access : public std::exception {
 public:
  const char* what() const noexcept override { return "opforge::expected: value() called on an error"; }
};

/// The error alternative, as a distinct type so that `return unexpected(e);` cannot be mistaken
/// for a value even when T and E are the same type.
template <typename E>
class unexpected {
 public:
  template <typename G = E>
  requires std::is_constructible_v<E, G&&>
  constexpr explicit unexpected(G&& e) : error_(std::forward<G>(e)) {}

  constexpr const E& error() const& noexcept { return error_; }
  constexpr E& error() & noexcept { return error_; }
  constexpr E&& error() && noexcept { return std::move(error_); }

  friend constexpr bool operator==(const unexpected& a, const unexpected& b) { return a.error_ == b.error_; }

 private:
  E error_;
};
template <typename E>
unexpected(E) -> unexpected<E>;

/// Holds either a T or an E; index 0 is the value, index 1 the error (so T and E may coincide).
template <typename T, typename E>
class expected {
 public:
  using value_type = T;
  using error_type = E;

  constexpr expected() requires std::is_default_constructible_v<T> : v_(std::in_place_index<0>) {}

  template <typename U = T>
  requires(!std::is_same_v<std::remove_cvref_t<U>, expected> &&
           !std::is_same_v<std::remove_cvref_t<U>, std::in_place_t> &&
           std::is_constructible_v<T, U&&>) constexpr expected(U&& value)
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}

  template <typename G>
  requires std::is_constructible_v<E, const G&>
  constexpr expected(const unexpected<G>& e) : v_(std::in_place_index<1>, e.error()) {}
  template <typename G>
  requires std::is_constructible_v<E, G&&>
  constexpr expected(unexpected<G>&& e) : v_(std::in_place_index<1>, std::move(e).error()) {}

  template <typename... Args>
  constexpr explicit expected(std::in_place_t, Args&&... args)
      : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  constexpr bool has_value() const noexcept { return v_.index() == 0; }
  constexpr explicit operator bool() const noexcept { return has_value(); }

  constexpr T& value() & { return check(), std::get<0>(v_); }
  constexpr const T& value() const& { return check(), std::get<0>(v_); }
  constexpr T&& value() && { return check(), std::get<0>(std::move(v_)); }

  constexpr E& error() & { return std::get<1>(v_); }
  constexpr const E& error() const& { return std::get<1>(v_); }
  constexpr E&& error() && { return std::get<1>(std::move(v_)); }

  constexpr T& operator*() & { return std::get<0>(v_); }
  constexpr const T& operator*() const& { return std::get<0>(v_); }
  constexpr T&& operator*() && { return std::get<0>(std::move(v_)); }
  constexpr T* operator->() { return &std::get<0>(v_); }
  constexpr const T* operator->() const { return &std::get<0>(v_); }

  template <typename U>
  constexpr T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  constexpr T value_or(U&& fallback) && {
    return has_value() ? std::get<0>(std::move(v_)) : static_cast<T>(std::forward<U>(fallback));
  }

  template <typename U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, expected>) friend constexpr bool operator==(const expected& a,
                                                                                               const U& b) {
    return a.has_value() && *a == b;
  }
  template <typename G>
  friend constexpr bool operator==(const expected& a, const unexpected<G>& b) {
    return !a.has_value() && a.error() == b.error();
  }

 private:
  constexpr void check() const {
    if (!has_value()) throw bad_expected_access();
  }
  std::variant<T, E> v_;
};

/// The void case: success carries nothing.
template <typename E>
class expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  constexpr expected() = default;
  template <typename G>
  requires std::is_constructible_v<E, const G&>
  constexpr expected(const unexpected<G>& e) : v_(std::in_place_index<1>, e.error()) {}
  template <typename G>
  requires std::is_constructible_v<E, G&&>
  constexpr expected(unexpected<G>&& e) : v_(std::in_place_index<1>, std::move(e).error()) {}

  constexpr bool has_value() const noexcept { return v_.index() == 0; }
  constexpr explicit operator bool() const noexcept { return has_value(); }
  constexpr void value() const {
    if (!has_value()) throw bad_expected_access();
  }

  constexpr E& error() & { return std::get<1>(v_); }
  constexpr const E& error() const& { return std::get<1>(v_); }
  constexpr E&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<std::monostate, E> v_;
};

}  // namespace opforge
