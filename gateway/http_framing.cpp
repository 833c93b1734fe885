#include "gateway/http_framing.hpp"

#include <strings.h>

namespace corral::gateway {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

std::string_view trim_ows(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
}


Refusal refuse(std::string why, std::string_view code = "smuggling") {
    return Refusal{std::string(code), std::move(why)};
}

}  // namespace

bool contains_token(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        auto comma = list.find(',');
        if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

HeadScan scan_head(std::string_view data) {
    HeadScan scan;
    std::size_t line_start = 0;
    bool seen_request_line = false;
    for (std::size_t i = 0; i < data.size(); ++i) {
        if (data[i] != '\n') continue;
        if (i == 0 || data[i - 1] != '\r') {
            scan.bare_lf = true;
            return scan;
        }
        bool empty_line = (i - line_start == 1);
        line_start = i + 1;
        if (!empty_line) {
            seen_request_line = true;
        } else if (seen_request_line) {
            scan.end = i + 1;
            return scan;
        }
    }
    return scan;
}

std::optional<Refusal> check_request_framing(std::string_view head) {
    std::size_t pos = 0;
    while (head.substr(pos, 2) == "\r\n") pos += 2;  // tolerated leading empty lines
    auto next_line = [&](std::string_view& line) {
        auto eol = head.find("\r\n", pos);
        if (eol == std::string_view::npos) return false;
        line = head.substr(pos, eol - pos);
        pos = eol + 2;
        return true;
    };
    std::string_view line;
    if (!next_line(line) || line.empty()) return refuse("no request line", "bad_request");
    for (char c : line)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            return refuse("control character in the request line", "bad_request");

    int content_length = 0, transfer_encoding = 0;
    while (next_line(line) && !line.empty()) {
        if (line.front() == ' ' || line.front() == '\t')
            return refuse("obs-fold (a header line continued on the next line)");
        auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0)
            return refuse("header line without a field name and ':'", "bad_request");
        std::string_view name = line.substr(0, colon);
        if (name.back() == ' ' || name.back() == '\t')
            return refuse("whitespace between a field name and ':'");
        for (char c : name)
            if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '(' || c == ')' ||
                c == ',' || c == '/' || c == ';' || c == '<' || c == '=' || c == '>' || c == '?' ||
                c == '@' || c == '[' || c == '\\' || c == ']' || c == '{' || c == '}')
                return refuse("invalid character in a field name", "bad_request");
        std::string_view value = trim_ows(line.substr(colon + 1));
        for (char c : value)
            if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
                return refuse("control character in a field value");
        if (iequals(name, "content-length")) {
            ++content_length;
            if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos ||
                value.size() > 18)
                return refuse("Content-Length is not one decimal number");
        } else if (iequals(name, "transfer-encoding")) {
            ++transfer_encoding;
            if (!iequals(value, "chunked"))
                return refuse("Transfer-Encoding other than exactly \"chunked\"");
        } else if (iequals(name, "upgrade")) {
            if (contains_token(value, "h2c")) return refuse("Upgrade: h2c");
        } else if (iequals(name, "http2-settings")) {
            return refuse("HTTP2-Settings (h2c upgrade)");
        }
    }
    if (content_length > 1) return refuse("more than one Content-Length field");
    if (transfer_encoding > 1) return refuse("more than one Transfer-Encoding field");
    if (content_length && transfer_encoding) return refuse("both Content-Length and Transfer-Encoding");
    return std::nullopt;
}

}  // namespace corral::gateway
