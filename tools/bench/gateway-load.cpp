// tools/bench/gateway-load.cpp — load generator and upstream for tools/bench/gateway.sh.
// Built by the script with g++ (Boost.Asio/Beast + OpenSSL, header-only Boost).
//
//   gateway-load serve --cert C --key K [--api-key FILE]
//       HTTPS keep-alive upstream answering every request with "ok" (GET
//       /sse?bytes=N: an event stream, see sse; GET /key-check: "injected" when
//       its x-api-key is FILE's key, else "not injected"), and a bulk
//       TCP server (reads an 8-byte big-endian count, writes that many bytes).
//       Prints "https PORT" and "bulk PORT", serves until killed. Thread per connection.
//       A POST (any path: the gateway decides what is metered, not the upstream)
//       is answered like a model API: a non-streaming Anthropic message with
//       usage; with ?events=N an Anthropic-shaped event stream of N events, each
//       its own chunk (message_start ... message_delta with usage, message_stop);
//       with ?hold=1 message_start, then the stream held open until the client
//       goes.
//   gateway-load bulk --target PORT [--proxy PORT] --bytes N
//       One bulk transfer (through a CONNECT tunnel if --proxy); prints "mbps X".
//   gateway-load rps --target HOST:PORT [--proxy PORT] --ca FILE --conns C --seconds S
//       C keep-alive TLS connections (CONNECT first if --proxy; else HOST
//       resolved with getaddrinfo and dialled) each sending GET /
//       back to back with an x-api-key placeholder; prints
//       "requests N rps X p50_us Y p99_us Z". With --post PATH: a POST of a small
//       Anthropic Messages body to PATH instead, expecting the JSON message.
//   gateway-load sse --target HOST:PORT [--proxy PORT] --ca FILE --bytes N
//       One GET /sse?bytes=N: the upstream answers with a chunked
//       text/event-stream of model-like events (N bytes of them, 64 events per
//       chunk); prints "mbps X" for the whole stream as the client read it.
//   gateway-load events --target HOST:PORT [--proxy PORT] --ca FILE --post PATH [--post2 PATH2] --events N --streams S
//       S streaming POSTs to PATH?events=N back to back on one keep-alive
//       connection; prints "ttfb_us X event_us Y" (medians over the streams:
//       request sent to the first event read; whole stream / N). With --post2,
//       S more to PATH2 on a second connection, alternating with the first's;
//       prints both pairs on one line.
//   gateway-load hold --target HOST:PORT --proxy PORT --count N [--ca FILE --post PATH]
//       Opens N CONNECT tunnels, prints "held N", keeps them until stdin closes.
//       With --post: each one a TLS connection with a streaming POST to
//       PATH?hold=1 whose first event has been read (an open model stream).
// Everything is loopback; HOST is the name used for CONNECT, SNI and Host.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::map<std::string, std::string> args;

std::string arg(const std::string& k, const std::string& def = "") {
    auto it = args.find(k);
    if (it != args.end()) return it->second;
    if (def.empty()) {
        std::fprintf(stderr, "gateway-load: missing --%s\n", k.c_str());
        std::exit(2);
    }
    return def;
}

tcp::endpoint loopback(int port) { return {asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)}; }

// Connects to the target, through a CONNECT tunnel when --proxy is given.
// Without it the host is resolved (getaddrinfo, once per connection), so a
// name in a box goes through its DNS stub and is captured (tools/bench/capture.sh);
// "127.0.0.1" resolves to itself.
tcp::socket open_socket(asio::io_context& io, const std::string& host, int port) {
    tcp::socket s(io);
    int proxy = std::stoi(arg("proxy", "0"));
    if (proxy) {
        s.connect(loopback(proxy));
    } else {
        tcp::resolver resolver(io);
        asio::connect(s, resolver.resolve(host, std::to_string(port)));
    }
    s.set_option(tcp::no_delay(true));
    if (proxy) {
        std::string authority = host + ":" + std::to_string(port);
        std::string req = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
        asio::write(s, asio::buffer(req));
        asio::streambuf buf;
        asio::read_until(s, buf, "\r\n\r\n");
        std::string head(asio::buffers_begin(buf.data()), asio::buffers_end(buf.data()));
        if (head.rfind("HTTP/1.1 200", 0) != 0 && head.rfind("HTTP/1.0 200", 0) != 0)
            throw std::runtime_error("CONNECT refused: " + head.substr(0, head.find('\r')));
        if (buf.size() != head.size()) throw std::runtime_error("bytes after CONNECT response");
    }
    return s;
}

std::pair<std::string, int> split_target(const std::string& t) {
    auto c = t.rfind(':');
    return {t.substr(0, c), std::stoi(t.substr(c + 1))};
}

// A model's stream: content_block_delta events of ~150 bytes, 64 to a chunk.
template <class Stream>
void write_event_stream(Stream& s, std::uint64_t bytes) {
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    asio::write(s, asio::buffer(head));
    std::string chunk;
    std::uint64_t sent = 0;
    for (std::uint64_t i = 0; sent < bytes; ++i) {
        std::string ev = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                         "\"delta\":{\"type\":\"text_delta\",\"text\":\"token " + std::to_string(i) + " of the answer\"}}\n\n";
        if (sent + ev.size() > bytes) ev.resize(bytes - sent);
        chunk += ev;
        sent += ev.size();
        if (i % 64 == 63 || sent == bytes) {
            char line[24];
            int n = std::snprintf(line, sizeof line, "%zx\r\n", chunk.size());
            chunk.insert(0, line, static_cast<std::size_t>(n));
            chunk += "\r\n";
            asio::write(s, asio::buffer(chunk));
            chunk.clear();
        }
    }
    asio::write(s, asio::buffer(std::string("0\r\n\r\n")));
}

// A small Anthropic Messages request, as the agents send it.
std::string messages_body(bool stream) {
    return std::string("{\"model\":\"claude-bench-1\",\"max_tokens\":1024,") + (stream ? "\"stream\":true," : "") +
           "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]}";
}

// The non-streaming answer to messages_body(): a message with its usage.
constexpr const char* message_answer =
    "{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench-1\","
    "\"content\":[{\"type\":\"text\",\"text\":\"Hello, benchmark.\"}],\"stop_reason\":\"end_turn\","
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":14,\"output_tokens\":5}}";

template <class Stream>
void write_chunk(Stream& s, const std::string& data) {
    char line[24];
    int n = std::snprintf(line, sizeof line, "%zx\r\n", data.size());
    std::string chunk(line, static_cast<std::size_t>(n));
    chunk += data;
    chunk += "\r\n";
    asio::write(s, asio::buffer(chunk));
}

std::string sse_event(const std::string& type, const std::string& data) {
    return "event: " + type + "\ndata: " + data + "\n\n";
}

// An Anthropic stream of `events` events (at least 6), each written as its own
// chunk, so that what is measured per event is the per-event cost.
template <class Stream>
void write_message_stream(Stream& s, int events, bool hold) {
    asio::write(s, asio::buffer(std::string(
                       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")));
    write_chunk(s, sse_event("message_start",
                             "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\","
                             "\"role\":\"assistant\",\"model\":\"claude-bench-1\",\"content\":[],"
                             "\"usage\":{\"input_tokens\":14,\"output_tokens\":1}}}"));
    if (hold) {
        char c;
        boost::system::error_code ec;
        s.read_some(asio::buffer(&c, 1), ec);  // until the client goes
        throw std::runtime_error("held stream over");
    }
    write_chunk(s, sse_event("content_block_start",
                             "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"));
    int deltas = std::max(1, events - 5);
    for (int i = 0; i < deltas; ++i)
        write_chunk(s, sse_event("content_block_delta",
                                 "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
                                 "\"text\":\"token " + std::to_string(i) + " of the answer\"}}"));
    write_chunk(s, sse_event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"));
    write_chunk(s, sse_event("message_delta",
                             "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
                             "\"usage\":{\"output_tokens\":" + std::to_string(deltas) + "}}"));
    write_chunk(s, sse_event("message_stop", "{\"type\":\"message_stop\"}"));
    asio::write(s, asio::buffer(std::string("0\r\n\r\n")));
}

// The value of `key` in the target's query, or "".
std::string query_value(std::string_view target, const std::string& key) {
    auto q = target.find('?');
    if (q == std::string_view::npos) return "";
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        auto amp = rest.find('&');
        std::string_view kv = rest.substr(0, amp);
        if (kv.rfind(key + "=", 0) == 0) return std::string(kv.substr(key.size() + 1));
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
    }
    return "";
}

// The bulk upstream: per connection, an 8-byte big-endian count, then that many bytes.
void serve_bulk_connection(tcp::socket s) {
    try {
        unsigned char n[8];
        asio::read(s, asio::buffer(n));
        std::uint64_t left = 0;
        for (unsigned char b : n) left = (left << 8) | b;
        std::vector<char> chunk(256 * 1024, 'x');
        while (left > 0) {
            auto k = std::min<std::uint64_t>(left, chunk.size());
            asio::write(s, asio::buffer(chunk.data(), k));
            left -= k;
        }
        s.shutdown(tcp::socket::shutdown_send);
        char c;
        boost::system::error_code ec;
        s.read_some(asio::buffer(&c, 1), ec);
    } catch (...) {
    }
}

void write_small_answer(ssl::stream<tcp::socket>& tls, const http::request<http::string_body>& req,
                        const char* content_type, const std::string& body) {
    http::response<http::string_body> res(http::status::ok, 11);
    res.set(http::field::content_type, content_type);
    res.body() = body;
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::write(tls, res);
}

// The HTTPS upstream: /sse?bytes=N streams N bytes of events; a POST answers
// a model message (?events=N: streamed; ?hold=1: held open first); /key-check
// says whether the request carried the real key (what a proxy in front of it
// injected; `api_key` empty: never); anything else "ok".
void serve_https_connection(ssl::context& ctx, tcp::socket s, const std::string& api_key) {
    try {
        s.set_option(tcp::no_delay(true));
        ssl::stream<tcp::socket> tls(std::move(s), ctx);
        tls.handshake(ssl::stream_base::server);
        boost::beast::flat_buffer buf;
        for (;;) {
            http::request<http::string_body> req;
            http::read(tls, buf, req);
            std::string_view target(req.target().data(), req.target().size());
            if (target.rfind("/sse?bytes=", 0) == 0) {
                write_event_stream(tls, std::stoull(std::string(target.substr(11))));
                continue;
            }
            if (req.method() == http::verb::post) {
                if (auto n = query_value(target, "events"); !n.empty()) {
                    write_message_stream(tls, std::stoi(n), false);
                    continue;
                }
                if (query_value(target, "hold") == "1") write_message_stream(tls, 0, true);
                write_small_answer(tls, req, "application/json", message_answer);
            } else if (target == "/key-check") {
                bool injected = !api_key.empty() && req["x-api-key"] == api_key;
                write_small_answer(tls, req, "text/plain", injected ? "injected" : "not injected");
            } else {
                write_small_answer(tls, req, "text/plain", "ok");
            }
            if (!req.keep_alive()) break;
        }
    } catch (...) {
    }
}

int serve() {
    ssl::context ctx(ssl::context::tls_server);
    ctx.use_certificate_chain_file(arg("cert"));
    ctx.use_private_key_file(arg("key"), ssl::context::pem);
    std::string api_key;
    if (args.count("api-key")) {
        std::ifstream f(args["api-key"]);
        if (!std::getline(f, api_key)) throw std::runtime_error("cannot read --api-key " + args["api-key"]);
    }
    asio::io_context io;
    tcp::acceptor https(io, loopback(0));
    tcp::acceptor bulk(io, loopback(0));
    std::printf("https %d\nbulk %d\n", https.local_endpoint().port(), bulk.local_endpoint().port());
    std::fflush(stdout);
    std::thread([&] {
        for (;;) {
            tcp::socket s(io);
            bulk.accept(s);
            std::thread(serve_bulk_connection, std::move(s)).detach();
        }
    }).detach();
    for (;;) {
        tcp::socket s(io);
        https.accept(s);
        std::thread([&ctx, &api_key, s = std::move(s)]() mutable { serve_https_connection(ctx, std::move(s), api_key); })
            .detach();
    }
}

int bulk() {
    asio::io_context io;
    std::uint64_t bytes = std::stoull(arg("bytes"));
    auto s = open_socket(io, "127.0.0.1", std::stoi(arg("target")));
    unsigned char n[8];
    for (int i = 0; i < 8; ++i) n[i] = static_cast<unsigned char>(bytes >> (56 - 8 * i));
    auto t0 = Clock::now();
    asio::write(s, asio::buffer(n));
    std::vector<char> buf(256 * 1024);
    std::uint64_t got = 0;
    boost::system::error_code ec;
    while (got < bytes) {
        auto k = s.read_some(asio::buffer(buf), ec);
        if (ec) break;
        got += k;
    }
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (got != bytes) {
        std::fprintf(stderr, "gateway-load bulk: got %llu of %llu bytes\n", (unsigned long long)got,
                     (unsigned long long)bytes);
        return 1;
    }
    std::printf("mbps %.1f\n", static_cast<double>(bytes) / secs / 1e6);
    return 0;
}

// One connection's requests until the deadline, each one's latency in µs
// appended to `lat`. Throws on a failed handshake or an unexpected answer.
void rps_connection(const std::string& host, int port, const std::string& sni, const std::string& post,
                    Clock::time_point deadline, std::vector<std::uint32_t>& lat) {
    asio::io_context io;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(arg("ca"));
    ctx.set_verify_mode(ssl::verify_peer);
    ssl::stream<tcp::socket> tls(open_socket(io, host, port), ctx);
    bool is_ip = host.find_first_not_of("0123456789.") == std::string::npos;
    if (!is_ip) SSL_set_tlsext_host_name(tls.native_handle(), sni.c_str());
    tls.set_verify_callback(ssl::host_name_verification(host));
    tls.handshake(ssl::stream_base::client);
    http::request<http::string_body> req(post.empty() ? http::verb::get : http::verb::post, post.empty() ? "/" : post, 11);
    req.set(http::field::host, host + ":" + std::to_string(port));
    req.set("x-api-key", "sk-ant-api03-placeholder");
    if (!post.empty()) {
        req.set(http::field::content_type, "application/json");
        req.set("anthropic-version", "2023-06-01");
        req.body() = messages_body(false);
        req.prepare_payload();
    }
    req.keep_alive(true);
    boost::beast::flat_buffer buf;
    while (Clock::now() < deadline) {
        auto t0 = Clock::now();
        http::write(tls, req);
        http::response<http::string_body> res;
        http::read(tls, buf, res);
        if (res.result_int() != 200)
            throw std::runtime_error("status " + std::to_string(res.result_int()) + ": " + res.body());
        if (!post.empty() && res.body() != message_answer) throw std::runtime_error("not the message: " + res.body());
        lat.push_back(
            static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
    }
}

int rps() {
    auto [host, port] = split_target(arg("target"));
    int conns = std::stoi(arg("conns", "1"));
    double seconds = std::stod(arg("seconds", "5"));
    std::string sni = arg("sni", host);
    std::string post = args.count("post") ? args["post"] : "";
    std::mutex m;
    std::vector<std::uint32_t> all;
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    for (int i = 0; i < conns; ++i)
        threads.emplace_back([&, host = host, port = port] {
            std::vector<std::uint32_t> lat;
            try {
                rps_connection(host, port, sni, post, deadline, lat);
            } catch (const std::exception& e) {
                if (failed++ == 0) std::fprintf(stderr, "gateway-load rps: %s\n", e.what());
            }
            std::lock_guard lock(m);
            all.insert(all.end(), lat.begin(), lat.end());
        });
    for (auto& t : threads) t.join();
    if (all.empty()) return 1;
    std::sort(all.begin(), all.end());
    std::printf("requests %zu rps %.0f p50_us %u p99_us %u failed_conns %d\n", all.size(),
                static_cast<double>(all.size()) / seconds, all[all.size() / 2], all[all.size() * 99 / 100],
                failed.load());
    return failed.load() ? 1 : 0;
}

int sse() {
    auto [host, port] = split_target(arg("target"));
    std::uint64_t bytes = std::stoull(arg("bytes"));
    asio::io_context io;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(arg("ca"));
    ctx.set_verify_mode(ssl::verify_peer);
    ssl::stream<tcp::socket> tls(open_socket(io, host, port), ctx);
    tls.set_verify_callback(ssl::host_name_verification(host));
    tls.handshake(ssl::stream_base::client);
    http::request<http::empty_body> req(http::verb::get, "/sse?bytes=" + std::to_string(bytes), 11);
    req.set(http::field::host, host + ":" + std::to_string(port));
    req.set("x-api-key", "sk-ant-api03-placeholder");
    auto t0 = Clock::now();
    http::write(tls, req);
    boost::beast::flat_buffer buf;
    http::response_parser<http::string_body> p;
    p.body_limit(boost::none);
    http::read(tls, buf, p);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (p.get().body().size() != bytes) {
        std::fprintf(stderr, "gateway-load sse: got %zu of %llu bytes\n", p.get().body().size(),
                     (unsigned long long)bytes);
        return 1;
    }
    std::printf("mbps %.1f\n", static_cast<double>(bytes) / secs / 1e6);
    return 0;
}

// A TLS connection to the target (through --proxy's CONNECT when given), the
// upstream's certificate checked against --ca for host `host`.
std::unique_ptr<ssl::stream<tcp::socket>> open_tls(asio::io_context& io, ssl::context& ctx, const std::string& host,
                                                   int port) {
    auto tls = std::make_unique<ssl::stream<tcp::socket>>(open_socket(io, host, port), ctx);
    tls->set_verify_callback(ssl::host_name_verification(host));
    tls->handshake(ssl::stream_base::client);
    return tls;
}

http::request<http::string_body> streaming_post(const std::string& host, int port, const std::string& target) {
    http::request<http::string_body> req(http::verb::post, target, 11);
    req.set(http::field::host, host + ":" + std::to_string(port));
    req.set("x-api-key", "sk-ant-api03-placeholder");
    req.set(http::field::content_type, "application/json");
    req.set("anthropic-version", "2023-06-01");
    req.body() = messages_body(true);
    req.prepare_payload();
    req.keep_alive(true);
    return req;
}

// Reads `p` until its body holds a whole first event.
void read_first_event(ssl::stream<tcp::socket>& tls, boost::beast::flat_buffer& buf,
                      http::response_parser<http::string_body>& p) {
    while (p.get().body().find("\n\n") == std::string::npos) {
        if (p.is_done()) throw std::runtime_error("stream ended before its first event");
        http::read_some(tls, buf, p);
    }
    if (p.get().result_int() != 200) throw std::runtime_error("status " + std::to_string(p.get().result_int()));
}

std::uint32_t median_of(std::vector<std::uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int events() {
    auto [host, port] = split_target(arg("target"));
    int n = std::stoi(arg("events"));
    int streams = std::stoi(arg("streams", "20"));
    asio::io_context io;
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(arg("ca"));
    ctx.set_verify_mode(ssl::verify_peer);
    // With --post2, a second connection whose streams alternate with the
    // first's, so that both see the same load on the machine.
    std::vector<std::string> paths{arg("post")};
    if (args.count("post2")) paths.push_back(args["post2"]);
    struct Path {
        std::unique_ptr<ssl::stream<tcp::socket>> tls;
        http::request<http::string_body> req;
        boost::beast::flat_buffer buf;
        std::vector<std::uint32_t> ttfb, per_event_ns;
    };
    std::vector<Path> ps;
    for (const auto& path : paths)
        ps.push_back({open_tls(io, ctx, host, port), streaming_post(host, port, path + "?events=" + std::to_string(n)), {},
                      {}, {}});
    for (int i = 0; i < streams; ++i)
        for (auto& x : ps) {
            auto t0 = Clock::now();
            http::write(*x.tls, x.req);
            http::response_parser<http::string_body> p;
            p.body_limit(boost::none);
            read_first_event(*x.tls, x.buf, p);
            auto t1 = Clock::now();
            http::read(*x.tls, x.buf, p);
            auto t2 = Clock::now();
            const std::string& body = p.get().body();
            std::size_t got = 0;
            for (auto at = body.find("\n\n"); at != std::string::npos; at = body.find("\n\n", at + 2)) ++got;
            if (static_cast<int>(got) != std::max(6, n) || body.find("event: message_stop") == std::string::npos)
                throw std::runtime_error("stream of " + std::to_string(got) + " events, wanted " + std::to_string(n));
            x.ttfb.push_back(
                static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
            x.per_event_ns.push_back(static_cast<std::uint32_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t0).count() / static_cast<long>(got)));
        }
    for (std::size_t k = 0; k < ps.size(); ++k)
        std::printf("%sttfb_us %u event_us %.3f", k ? " " : "", median_of(ps[k].ttfb), median_of(ps[k].per_event_ns) / 1000.0);
    std::printf("\n");
    return 0;
}

int hold() {
    auto [host, port] = split_target(arg("target"));
    int count = std::stoi(arg("count"));
    asio::io_context io;
    std::vector<tcp::socket> held;
    std::vector<std::unique_ptr<ssl::stream<tcp::socket>>> streams;
    std::vector<std::unique_ptr<boost::beast::flat_buffer>> bufs;
    std::vector<std::unique_ptr<http::response_parser<http::string_body>>> parsers;
    std::optional<ssl::context> ctx;
    if (args.count("post")) {
        ctx.emplace(ssl::context::tls_client);
        ctx->load_verify_file(arg("ca"));
        ctx->set_verify_mode(ssl::verify_peer);
    }
    for (int i = 0; i < count; ++i) {
        if (!ctx) {
            held.push_back(open_socket(io, host, port));
            continue;
        }
        streams.push_back(open_tls(io, *ctx, host, port));
        http::write(*streams.back(), streaming_post(host, port, arg("post") + "?hold=1"));
        bufs.push_back(std::make_unique<boost::beast::flat_buffer>());
        parsers.push_back(std::make_unique<http::response_parser<http::string_body>>());
        read_first_event(*streams.back(), *bufs.back(), *parsers.back());
    }
    std::printf("held %d\n", count);
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: gateway-load serve|bulk|rps|sse|events|hold --key value ...\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) args[std::string(argv[i]).substr(2)] = argv[i + 1];
    std::string mode = argv[1];
    try {
        if (mode == "serve") return serve();
        if (mode == "bulk") return bulk();
        if (mode == "rps") return rps();
        if (mode == "sse") return sse();
        if (mode == "events") return events();
        if (mode == "hold") return hold();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gateway-load %s: %s\n", mode.c_str(), e.what());
        return 1;
    }
    std::fprintf(stderr, "gateway-load: unknown mode %s\n", mode.c_str());
    return 2;
}
