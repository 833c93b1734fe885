// run_event_loop: an exception escaping a handler must not end the loop.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <stdexcept>
#include <string>

#include "gateway/gateway.hpp"

using namespace corral::gateway;

TEST_CASE("run_event_loop survives exceptions thrown by handlers and keeps serving") {
    boost::asio::io_context loop(1);
    int ran_after = 0;
    // What Beast 1.81 does with a trailer value over 65535 bytes: throws
    // std::length_error from a read's completion handler.
    boost::asio::post(loop, [] { throw std::length_error("field value too large"); });
    boost::asio::post(loop, [&] { ++ran_after; });
    boost::asio::post(loop, [] { throw 42; });  // not even a std::exception
    boost::asio::post(loop, [&] { ++ran_after; });
    CHECK(run_event_loop(loop, "test loop") == 2);
    CHECK(ran_after == 2);
}

TEST_CASE("run_event_loop returns when the loop is stopped") {
    boost::asio::io_context loop(1);
    boost::asio::post(loop, [&] { loop.stop(); });
    bool ran = false;
    boost::asio::post(loop, [&] { ran = true; });
    CHECK(run_event_loop(loop, "test loop") == 0);
    CHECK_FALSE(ran);
}
