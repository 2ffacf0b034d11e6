// floodctl daemon --web-config-file (control/daemon/web_config.h): the exporters' web config
// read into the endpoint's TLS and basic auth, each refusal naming file, line and field; and
// basic auth checked against bcrypt hashes made by htpasswd (control/metrics/web_auth.h).
#include "control/daemon/web_config.h"
#include "control/metrics/credential_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace floodgate {
namespace {

namespace fs = std::filesystem;

// htpasswd -nbBC 4 prom s3cret, and -nbBC 4 other pw2: made outside the code under test.
constexpr const char *kPromHash = "$2y$04$TfSrUs7R7va6GZC/hKsvlux9CrzF12NIWU/WMPS1PZMMvrTJxVp8m";
constexpr const char *kOtherHash = "$2y$04$97dtuudpwVSOXX4u3/BwPueqn8/1eORPgA40Q74W4gc5oFM7N.nvC";

class WebConfig : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("fg-web-config-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        write("server.crt", "CERT PEM\n");
        write("server.key", "KEY PEM\n", 0600);
        write("ca.crt", "CA PEM\n");
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string &name, const std::string &text, mode_t mode = 0644) {
        const std::string path = (dir_ / name).string();
        std::ofstream(path) << text;
        ::chmod(path.c_str(), mode);
        return path;
    }

    // The config's text as web.yml; the loaded result, or the refusal in *why.
    std::optional<WebAuth> load(const std::string &text, std::string *why) {
        return load_web_config(write("web.yml", text), why);
    }

    std::string path(const std::string &name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

TEST_F(WebConfig, TlsAndUsersWithPathsRelativeToTheFile) {
    std::string why;
    const auto auth = load(std::string("tls_server_config:\n"
                                       "  cert_file: server.crt\n"
                                       "  key_file: ") +
                               path("server.key") +
                               "\n"
                               "  client_auth_type: RequireAndVerifyClientCert\n"
                               "  client_ca_file: ca.crt\n"
                               "  min_version: TLS13\n"
                               "basic_auth_users:\n"
                               "  prom: " +
                               kPromHash + "\n  other: '" + kOtherHash + "'\n",
                           &why);
    ASSERT_TRUE(auth) << why;
    EXPECT_TRUE(auth->tls_on);
    EXPECT_EQ(auth->tls.cert_pem, "CERT PEM\n");
    EXPECT_EQ(auth->tls.key_pem, "KEY PEM\n");
    EXPECT_EQ(auth->tls.client_ca_pem, "CA PEM\n");
    EXPECT_EQ(auth->tls.client_auth, ClientAuth::require_and_verify);
    EXPECT_EQ(auth->tls.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
    ASSERT_EQ(auth->users.size(), 2u);
    EXPECT_EQ(auth->users[0].first, "prom");
    EXPECT_EQ(auth->users[1].second, kOtherHash);
}

TEST_F(WebConfig, DefaultsAreTls12AndUpWithoutClientCertificates) {
    std::string why;
    const auto auth =
        load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", &why);
    ASSERT_TRUE(auth) << why;
    EXPECT_EQ(auth->tls.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3");
    EXPECT_EQ(auth->tls.client_auth, ClientAuth::none);
    EXPECT_TRUE(auth->users.empty());
}

TEST_F(WebConfig, UnknownFieldNamedWithFileAndLine) {
    std::string why;
    EXPECT_FALSE(
        load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
             "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
             &why));
    EXPECT_EQ(why.rfind(path("web.yml") + ":4: tls_server_config.cipher_suites: unknown field", 0),
              0u)
        << why;
    EXPECT_FALSE(load("http_server_config:\n  http2: false\n", &why));
    EXPECT_EQ(why.rfind(path("web.yml") + ":1: http_server_config: unknown field", 0), 0u) << why;
}

TEST_F(WebConfig, BadHashRefused) {
    std::string why;
    EXPECT_FALSE(load("basic_auth_users:\n  prom: s3cret\n", &why));
    EXPECT_EQ(why.rfind(path("web.yml") + ":2: basic_auth_users.prom: not a bcrypt hash", 0), 0u)
        << why;
    // A hash of the right shape whose cost libxcrypt refuses (bcrypt's costs are 4-31).
    std::string bad = kPromHash;
    bad.replace(4, 2, "03");
    EXPECT_FALSE(load("basic_auth_users:\n  prom: " + bad + "\n", &why));
    EXPECT_NE(why.find("not a bcrypt hash"), std::string::npos) << why;
    EXPECT_FALSE(load(
        std::string("basic_auth_users:\n  prom: ") + kPromHash + "\n  prom: " + kOtherHash + "\n",
        &why));
    EXPECT_NE(why.find(":3: basic_auth_users.prom: user given twice"), std::string::npos) << why;
}

TEST_F(WebConfig, MissingFilesRefused) {
    std::string why;
    EXPECT_FALSE(load_web_config(path("absent.yml"), &why));
    EXPECT_EQ(why.rfind(path("absent.yml") + ": cannot open: No such file or directory", 0), 0u)
        << why;
    EXPECT_FALSE(
        load("tls_server_config:\n  cert_file: absent.crt\n  key_file: server.key\n", &why));
    EXPECT_EQ(why, path("web.yml") + ":2: tls_server_config.cert_file: " + path("absent.crt") +
                       ": cannot open: No such file or directory");
    EXPECT_FALSE(load("tls_server_config:\n  cert_file: server.crt\n", &why));
    EXPECT_EQ(why, path("web.yml") + ":2: tls_server_config.key_file: missing required field");
}

TEST_F(WebConfig, KeyOthersMayReadRefused) {
    write("server.key", "KEY PEM\n", 0640);
    std::string why;
    EXPECT_FALSE(
        load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", &why));
    EXPECT_NE(why.find(":3: tls_server_config.key_file: '" + path("server.key") +
                       "' may be read or written by others than its owner (mode 0640)"),
              std::string::npos)
        << why;
}

TEST_F(WebConfig, UnverifiedClientCertificatesRefused) {
    std::string why;
    EXPECT_FALSE(
        load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
             "  client_auth_type: RequireAnyClientCert\n  client_ca_file: ca.crt\n",
             &why));
    EXPECT_NE(why.find(":4: tls_server_config.client_auth_type: 'RequireAnyClientCert' takes"),
              std::string::npos)
        << why;
    EXPECT_FALSE(
        load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
             "  client_auth_type: VerifyClientCertIfGiven\n",
             &why));
    EXPECT_NE(why.find("tls_server_config.client_ca_file: missing"), std::string::npos) << why;
}

TEST(BasicAuth, MatchesOnlyTheRightUserAndPassword) {
    const std::vector<std::pair<std::string, std::string>> users = {{"prom", kPromHash},
                                                                    {"other", kOtherHash}};
    EXPECT_TRUE(basic_auth_matches(users, "prom", "s3cret"));
    EXPECT_TRUE(basic_auth_matches(users, "other", "pw2"));
    EXPECT_FALSE(basic_auth_matches(users, "prom", "pw2"));
    EXPECT_FALSE(basic_auth_matches(users, "other", "s3cret"));
    EXPECT_FALSE(basic_auth_matches(users, "nobody", "s3cret"));
    EXPECT_FALSE(basic_auth_matches(users, "prom", ""));
    EXPECT_FALSE(basic_auth_matches(users, "prom", std::string("s3cret\0x", 8)));
    EXPECT_FALSE(basic_auth_matches({}, "prom", "s3cret"));
}

// Basic auth with its cost bounded (credential_check.h): the clock is the test's, so every
// verdict below is known in advance.
TEST(CredentialCheck, RemembersMatchesAndBudgetsChecks) {
    CredentialCheck c({{"prom", kPromHash}, {"other", kOtherHash}});
    const double t = 1000;
    // The burst: kChecksBurst (4) checks at once, the fifth not checked at all.
    EXPECT_EQ(c.check("prom", "s3cret", t), CredentialVerdict::match);
    EXPECT_EQ(c.check("prom", "guess", t), CredentialVerdict::wrong);
    EXPECT_EQ(c.check("prom", "guess2", t), CredentialVerdict::wrong);
    EXPECT_EQ(c.check("nobody", "s3cret", t), CredentialVerdict::wrong);
    EXPECT_EQ(c.check("other", "pw2", t), CredentialVerdict::throttled);
    // Remembered credentials are answered with the budget spent; near misses are not them.
    EXPECT_EQ(c.check("prom", "s3cret", t), CredentialVerdict::match);
    EXPECT_EQ(c.check("prom", "s3cre", t), CredentialVerdict::throttled);
    EXPECT_EQ(c.check("prom", std::string("s3cret\0", 7), t), CredentialVerdict::throttled);
    EXPECT_EQ(c.check("pro", "ms3cret", t), CredentialVerdict::throttled);
    // kChecksPerSecond (4) a second: one check a quarter second, and no more.
    EXPECT_EQ(c.check("other", "pw2", t + 0.25), CredentialVerdict::match);
    EXPECT_EQ(c.check("prom", "guess", t + 0.25), CredentialVerdict::throttled);
    EXPECT_EQ(c.check("other", "pw2", t + 0.25), CredentialVerdict::match);
    // A long quiet time refills the burst, not more.
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(c.check("prom", "guess", t + 100), CredentialVerdict::wrong) << i;
    EXPECT_EQ(c.check("prom", "guess", t + 100), CredentialVerdict::throttled);
}

TEST(CredentialCheck, KeepsOnlyTheLastMatches) {
    std::vector<std::pair<std::string, std::string>> users;
    for (unsigned i = 0; i <= CredentialCheck::kRemembered; ++i)
        users.push_back({"user" + std::to_string(i), kPromHash});
    CredentialCheck c(users);
    double t = 0;
    // kRemembered + 1 users matched, a second apart (a full bucket each): the first is forgotten.
    for (const auto &[user, hash] : users)
        EXPECT_EQ(c.check(user, "s3cret", t += 1), CredentialVerdict::match);
    t += 1;  // the budget spent on wrong passwords, so that a forgotten match shows
    for (int i = 0; i < 4; ++i) EXPECT_EQ(c.check("nobody", "x", t), CredentialVerdict::wrong);
    for (unsigned i = 1; i <= CredentialCheck::kRemembered; ++i)
        EXPECT_EQ(c.check(users[i].first, "s3cret", t), CredentialVerdict::match) << i;
    EXPECT_EQ(c.check(users[0].first, "s3cret", t), CredentialVerdict::throttled);
}

}  // namespace
}  // namespace floodgate
