#include "gateway/headers.hpp"

#include <array>
#include <vector>

#include <boost/beast/core/string.hpp>

namespace corral::gateway {
namespace {

constexpr std::array<std::string_view, 4> client_credential_headers{"authorization", "x-api-key",
                                                                    "proxy-authorization", "cookie"};

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

bool is_client_credential_header(std::string_view name) {
    for (auto h : client_credential_headers)
        if (boost::beast::iequals(name, h)) return true;
    return false;
}

std::string render_template(std::string_view tmpl, const std::string& secret) {
    std::string out;
    out.reserve(tmpl.size() + secret.size());
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl.substr(i, 5) == "{key}") {
            out += secret;
            i += 5;
        } else if (tmpl.substr(i, 7) == "{token}") {
            out += secret;
            i += 7;
        } else {
            out += tmpl[i++];
        }
    }
    return out;
}

void rewrite_request_headers(boost::beast::http::fields& h, const config::CredentialSpec& c, const std::string& secret) {
    for (auto name : client_credential_headers) h.erase(boost::beast::string_view(name.data(), name.size()));
    for (const auto& [name, value] : c.headers) h.erase(name);
    for (const auto& [name, value] : c.headers) h.insert(name, render_template(value, secret));

    if (c.anthropic_beta.empty()) return;
    std::vector<std::string> tokens;
    auto add = [&](std::string_view t) {
        t = trim(t);
        if (t.empty()) return;
        for (const auto& have : tokens)
            if (boost::beast::iequals(have, t)) return;
        tokens.emplace_back(t);
    };
    for (const auto& field : h) {
        if (!boost::beast::iequals(field.name_string(), "anthropic-beta")) continue;
        std::string_view v(field.value().data(), field.value().size());
        std::size_t pos = 0;
        while (pos <= v.size()) {
            auto comma = v.find(',', pos);
            add(v.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
            if (comma == std::string_view::npos) break;
            pos = comma + 1;
        }
    }
    add(c.anthropic_beta);
    std::string merged;
    for (const auto& t : tokens) {
        if (!merged.empty()) merged += ',';
        merged += t;
    }
    h.set("anthropic-beta", merged);
}

void request_scannable_response(boost::beast::http::fields& h) {
    h.erase(boost::beast::http::field::accept_encoding);
    h.erase(boost::beast::http::field::sec_websocket_extensions);
    h.set(boost::beast::http::field::accept_encoding, "identity");
}

}  // namespace corral::gateway
