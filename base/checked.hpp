// base/checked.hpp — what a pure check returns on the host side: the value,
// or the one sentence saying what is wrong with its input.
//
// It is not a fourth way to fail (docs/architecture.md, "How a failure
// travels"): a pure check does not know whether its finding is a bad
// command line, a config error, a warning or a record to skip; its caller
// does, and turns the problem into one of the three shapes (or data) at once.
// That replaces the `std::string* problem` out-parameters, `""` meaning fine
// and `bool` plus a reason that each check had its own way.
//
//   Checked<MeterTotals> t = totals_from_json(j);
//   if (!t) throw UsageError(path + ": " + t.problem());
//   use(*t);
//
//   if (Problem bad = check_worker_name(name)) report(bad->problem);
//
// The gateway's checks return a `gateway::Refusal` instead: their finding
// already is an answer to the box.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace corral {

// A check's finding: one sentence naming what was wrong, where, and what is
// allowed. Returned as `Failed{...}` where a `Checked<T>` is expected.
struct Failed {
    std::string problem;
};

// A check with no value to hand back: nullopt when the input is fine.
using Problem = std::optional<Failed>;

template <class T>
class [[nodiscard]] Checked {
public:
    Checked(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
    Checked(Failed f) : v_(std::in_place_index<1>, std::move(f)) {}     // NOLINT: implicit by design

    // As std::optional and std::expected: whether it holds the value.
    explicit operator bool() const { return v_.index() == 0; }
    bool has_value() const { return v_.index() == 0; }

    const T& operator*() const& { return std::get<0>(v_); }
    T& operator*() & { return std::get<0>(v_); }
    T&& operator*() && { return std::get<0>(std::move(v_)); }
    const T* operator->() const { return &std::get<0>(v_); }
    T* operator->() { return &std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }

    // What was wrong; only when !has_value().
    const std::string& problem() const { return std::get<1>(v_).problem; }

private:
    std::variant<T, Failed> v_;
};

}  // namespace corral
