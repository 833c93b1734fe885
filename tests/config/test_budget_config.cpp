// [budget], [budget.worker] and [prices."MODEL"]: resolution worker over org,
// every bad value one line naming file, line, key and what is allowed, and a
// USD budget refused for a model without a price.
#include <doctest/doctest.h>

#include <string>

#include "config/org_config.hpp"
#include "tests/config/org_fixture.hpp"

using namespace corral;
using test::OrgDir;
using test::errors_of;

namespace {

const char* kPrice = "[prices.\"claude-x\"]\ninput = 3.0\noutput = 15\ncache_write = 3.75\ncache_read = 0.3\n"
                     "source = \"list\"\ndate = 2026-11-30\n";

}  // namespace

TEST_CASE("budget: each worker key replaces the organisation's; prices merge per model") {
    OrgDir d;
    d.org(std::string("[engine]\nmodel = \"claude-x\"\n[budget]\nrequests = 10\nusd = 2.5\n[budget.worker]\nusd = 20\n") +
          kPrice);
    d.worker("w", "[budget]\nrequests = 3\n[prices.\"claude-x\"]\ninput = 1\noutput = 2\ncache_write = 0\n"
                  "cache_read = 0\nsource = \"contract\"\ndate = \"2026-12-01\"\n");
    d.worker("v", "");
    auto org = config::load_org(d.str());
    auto w = config::resolve_worker(org, "w");
    CHECK(w.metering.run.requests == 3u);
    CHECK(w.metering.run.usd_micros == 2'500'000u);
    CHECK(w.metering.worker.usd_micros == 20'000'000u);
    REQUIRE(w.metering.prices.count("claude-x"));
    CHECK(w.metering.prices.at("claude-x").input == 1'000'000u);
    CHECK(w.metering.prices.at("claude-x").source == "contract");
    auto v = config::resolve_worker(org, "v");
    CHECK(v.metering.run.requests == 10u);
    CHECK(v.metering.prices.at("claude-x").cache_write == 3'750'000u);
    CHECK(v.metering.prices.at("claude-x").date == "2026-11-30");
}

TEST_CASE("budget: bad values name file, line, key and what is allowed") {
    OrgDir d;
    d.org("[budget]\nrequests = -1\nusd = \"five\"\nbogus = 1\n[budget.worker]\noutput_tokens = 1.5\n"
          "[prices.\"m\"]\ninput = 3.0\noutput = -2\ncache_write = 0\nsource = \"\"\ndate = \"yesterday\"\n");
    auto all = errors_of(d);
    CAPTURE(all);
    CHECK(all.find("org.toml:2: key 'budget.requests': got -1, allowed: an integer 0..") != std::string::npos);
    CHECK(all.find("org.toml:3: key 'budget.usd': got \"five\", allowed: a number of US dollars") != std::string::npos);
    CHECK(all.find("unknown key 'budget.bogus'") != std::string::npos);
    CHECK(all.find("key 'budget.worker.output_tokens'") != std::string::npos);
    CHECK(all.find("key 'prices.\"m\".output': got -2") != std::string::npos);
    CHECK(all.find("key 'prices.\"m\".cache_read' is missing") != std::string::npos);
    CHECK(all.find("key 'prices.\"m\".source' is missing") != std::string::npos);
    CHECK(all.find("key 'prices.\"m\".date': got \"yesterday\", allowed: the date the price was read, YYYY-MM-DD") !=
          std::string::npos);
}

TEST_CASE("budget: a USD limit needs a price for the worker's model, and a named model") {
    OrgDir d;
    d.org(std::string("[budget]\nusd = 1\n") + kPrice);
    d.worker("priced", "model = \"claude-x\"\n");
    d.worker("unpriced", "model = \"claude-y\"\n");
    d.worker("default", "");
    auto all = errors_of(d);
    CAPTURE(all);
    CHECK(all.find("worker 'priced'") == std::string::npos);
    CHECK(all.find("key 'budget.usd': worker 'unpriced': a usd budget and no price for the worker's model "
                   "\"claude-y\"") != std::string::npos);
    CHECK(all.find("worker 'default': a usd budget needs the worker's model named") != std::string::npos);
}

TEST_CASE("budget: a stand-alone gateway file takes [budget] and [prices] for every identity") {
    auto cfg = config::parse_gateway_config(std::string("[gateway]\nlisten_tcp = \"127.0.0.1:0\"\n[budget]\n"
                                                        "output_tokens = 500\n[budget.worker]\nrequests = 9\n") +
                                                kPrice,
                                            "gw.toml");
    CHECK(cfg.metering.run.output_tokens == 500u);
    CHECK(cfg.metering.worker.requests == 9u);
    CHECK(cfg.metering.prices.count("claude-x") == 1);
    CHECK_THROWS_WITH_AS(config::parse_gateway_config("[gateway]\nlisten_tcp = \"127.0.0.1:0\"\n[budget]\nusd = -1\n", "gw.toml"),
                         doctest::Contains("gw.toml:4: key 'budget.usd': got -1"), config::ConfigError);
}
