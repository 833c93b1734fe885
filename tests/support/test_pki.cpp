#include "tests/support/test_pki.hpp"

#include <fstream>
#include <stdexcept>
#include <vector>

#include "tests/support/process.hpp"

namespace corral::test {
namespace {

// `openssl req` with a fresh P-256 key and the given arguments, in dir.
void openssl_req(const std::string& dir, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                     "-nodes"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    run_checked(argv, dir);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("writing " + path + " failed");
}

}  // namespace

void make_test_ca(const std::string& dir, const std::string& common_name) {
    openssl_req(dir, {"-x509", "-keyout", "ca.key", "-out", "ca.crt", "-days", "3", "-subj", "/CN=" + common_name,
                      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
}

void make_test_leaf(const std::string& dir, const std::string& name, const std::string& san) {
    openssl_req(dir, {"-new", "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name});
    write_text(dir + "/" + name + ".ext", "subjectAltName=" + san +
                                              "\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                                              "extendedKeyUsage=serverAuth\n");
    run_checked({"openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext"},
                dir);
}

}  // namespace corral::test
