// gateway/headers.hpp — what an inject-mode request looks like on its way out.
//
// The box holds only sentinel credentials; whatever auth it sends is dropped
// and the real credential is rendered from the grant's credential template.
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http/fields.hpp>

#include "config/gateway_config.hpp"

namespace corral::gateway {

// True for the headers the box may never pass through in inject mode:
// authorization, x-api-key, proxy-authorization, cookie (any case).
bool is_client_credential_header(std::string_view name);

// Replaces every "{key}" and "{token}" in `tmpl` with `secret`; other text is
// copied verbatim (config validation already refused other braces).
std::string render_template(std::string_view tmpl, const std::string& secret);

// In place, on the request headers of one inject-mode request:
//  1. drops every field named authorization, x-api-key, proxy-authorization,
//     cookie (any case, every duplicate) and every field whose name is one of
//     the credential's template headers;
//  2. inserts each template header with render_template(value, secret);
//  3. when c.anthropic_beta is non-empty: merges all anthropic-beta fields into
//     one comma-separated field that keeps the client's tokens in order, drops
//     duplicate tokens (case-insensitive) and appends c.anthropic_beta if absent;
//  4. leaves every other field (and its order) alone.
void rewrite_request_headers(boost::beast::http::fields& h, const config::CredentialSpec& c, const std::string& secret);

// On an inject grant with a credential the response must be one the gateway
// can scan for it (gateway/response_scrub.hpp): `Accept-Encoding: identity`
// replaces whatever the box asked for (a compressed body cannot be searched),
// and `Sec-WebSocket-Extensions` is dropped (no permessage-deflate, whose
// frames are compressed).
void request_scannable_response(boost::beast::http::fields& h);

}  // namespace corral::gateway
