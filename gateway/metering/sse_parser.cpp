#include "gateway/metering/sse_parser.hpp"

#include <cstring>

namespace corral::gateway::metering {

namespace {
constexpr char kBom[] = "\xEF\xBB\xBF";
}

bool SseParser::fits(std::size_t more) {
    if (held() + more <= max_) return true;
    overflowed_ = true;
    line_.clear();
    line_.shrink_to_fit();
    name_.clear();
    data_.clear();
    data_.shrink_to_fit();
    return false;
}

void SseParser::feed(std::string_view piece) {
    if (overflowed_) return;
    // A BOM may only stand at the very start, and may arrive split.
    while (!started_ && !piece.empty()) {
        if (piece.front() == kBom[bom_seen_]) {
            piece.remove_prefix(1);
            if (++bom_seen_ == 3) started_ = true;
            continue;
        }
        started_ = true;
        if (bom_seen_ > 0) {  // a BOM's first bytes that were not a BOM after all: content
            std::size_t n = bom_seen_;
            bom_seen_ = 0;
            feed(std::string_view(kBom, n));
            if (overflowed_) return;
        }
    }
    while (!piece.empty()) {
        if (skip_lf_) {
            skip_lf_ = false;
            if (piece.front() == '\n') {
                piece.remove_prefix(1);
                continue;
            }
        }
        const void* hit_n = std::memchr(piece.data(), '\n', piece.size());
        const std::size_t until_n = hit_n ? static_cast<const char*>(hit_n) - piece.data() : piece.size();
        const void* hit_r = std::memchr(piece.data(), '\r', until_n);
        const std::size_t end = hit_r ? static_cast<const char*>(hit_r) - piece.data() : until_n;
        if (end == piece.size()) {  // no line end in this piece: hold the part line
            if (!fits(piece.size())) return;
            line_.append(piece);
            return;
        }
        const bool cr = piece[end] == '\r';
        // A line counts against the bound while it is read, whether it
        // arrived whole (read in place) or in pieces (gathered in line_): the
        // bound must not depend on where the stream was split.
        if (!fits(end)) return;
        if (line_.empty()) {
            take_line(piece.substr(0, end));
        } else {
            line_.append(piece.substr(0, end));
            std::string line;
            line.swap(line_);  // take_line() measures what is held without this line
            take_line(line);
            line.clear();
            if (!overflowed_) line_.swap(line);  // keep the buffer for the next line
        }
        if (overflowed_) return;
        piece.remove_prefix(end + 1);
        if (cr) {
            if (piece.empty())
                skip_lf_ = true;
            else if (piece.front() == '\n')
                piece.remove_prefix(1);
        }
    }
}

void SseParser::take_line(std::string_view line) {
    if (line.empty()) {
        if (has_data_) on_event_(name_, data_);
        name_.clear();
        data_.clear();
        has_data_ = false;
        return;
    }
    if (line.front() == ':') return;  // a comment (keep-alive)
    std::string_view field = line, value;
    if (auto colon = line.find(':'); colon != std::string_view::npos) {
        field = line.substr(0, colon);
        value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
        if (!fits(value.size() + 1)) return;
        if (has_data_) data_ += '\n';
        data_.append(value);
        has_data_ = true;
    } else if (field == "event") {
        if (!fits(value.size())) return;
        name_.assign(value);
    }
}

}  // namespace corral::gateway::metering
