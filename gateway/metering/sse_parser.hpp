// gateway/metering/sse_parser.hpp — Server-Sent Events (the WHATWG HTML
// "event stream" grammar) split into events as the bytes arrive, in pieces of
// any size, holding at most one event.
//
// Lines end in "\n", "\r\n" or "\r" (a "\r\n" split across two pieces is one
// line end); a leading BOM is skipped; ":" lines are comments; "data:" values
// (one leading space dropped) are joined by "\n"; "event:" names the event;
// a blank line dispatches it; an event with no data is not dispatched; an
// unterminated event at the end of the stream is dropped, as the spec says.
// "id" and "retry" are read past (nothing here reconnects).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace corral::gateway::metering {

// The most one event may hold (its pending line, event name and data
// together) before the stream is given up on: a model's usage events are a
// few hundred bytes, its largest ordinary events (a tool call's arguments in
// one delta) some kilobytes.
inline constexpr std::size_t kMaxSseEventBytes = 1024 * 1024;

class SseParser {
public:
    // name: the `event:` field ("" when the event had none); data: the joined
    // data lines. Both views live until the callback returns.
    using OnEvent = std::function<void(std::string_view name, std::string_view data)>;

    explicit SseParser(OnEvent on_event, std::size_t max_event_bytes = kMaxSseEventBytes)
        : on_event_(std::move(on_event)), max_(max_event_bytes) {}

    // Parses `piece`, calling on_event for each event it completes. After an
    // oversize event the parser is stopped: it reads nothing more.
    void feed(std::string_view piece);

    // True once an event grew past max_event_bytes (its bytes were dropped).
    bool overflowed() const { return overflowed_; }
    std::size_t max_event_bytes() const { return max_; }
    // Bytes held now (the line being read, the event's name and data).
    std::size_t held() const { return line_.size() + name_.size() + data_.size(); }

private:
    void take_line(std::string_view line);
    bool fits(std::size_t more);

    OnEvent on_event_;
    std::size_t max_;
    std::string line_;
    std::string name_;
    std::string data_;
    bool has_data_ = false;
    bool skip_lf_ = false;   // the last piece ended in '\r': a '\n' first is its pair
    std::size_t bom_seen_ = 0;  // bytes of a leading UTF-8 BOM matched so far
    bool started_ = false;    // past the point where a BOM may be
    bool overflowed_ = false;
};

}  // namespace corral::gateway::metering
