#!/usr/bin/python3
"""The metrics endpoint behind TLS and basic auth (issue 43), scraped by a real Prometheus: a
`floodgate run` on a one-frame trace and its `floodctl daemon --web-config-file`, the exporters'
web.config.file with a certificate this test makes with openssl (its own CA) and a bcrypt hash
made by htpasswd. Prometheus (Debian's package) listens on a free loopback port, keeps its
storage in the test's folder and is stopped at the end.

Checks, in order:
  1. a web config with a field floodctl does not implement is refused at start, naming the
     file, line and field;
  2. curl: without credentials, with a wrong password, an unknown user, a forged Authorization
     header: 401 with WWW-Authenticate; an oversized header refused; plain HTTP to the TLS port
     gets no HTTP answer, TLS 1.2 no handshake (min_version TLS13) (each counted as a connection
     without a request); 100 wrong passwords in a row: checked while the bcrypt budget lasts,
     the rest 429 unhashed, the right credentials still answered; the right credentials get
     the metrics, whose refusal counts are the requests above, counted here;
  3. Prometheus, configured with the CA and the same credentials, scrapes it: up{job} is 1,
     floodgate_dataplane_up 1 and the rule's matched count is the trace's one frame; a second
     job with a wrong password is up 0, its last error a 401;
  4. a second daemon (no dataplane) with client_auth_type RequireAndVerifyClientCert: no client
     certificate and one from another CA get 403, counted; the CA's client certificate 200.

Prints TAP; needs root (DPDK), openssl, htpasswd (apache2-utils), prometheus and curl.
Usage: test_metrics_tls.py BUILD_DIR
"""
import base64
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from control_lib import FLOODCTL, check, finish, plan, wait_until  # noqa: E402
from test_cluster import Box, free_port  # noqa: E402

USER, PASSWORD = "prometheus", "scrape-secret-43"
FLOOD = 100  # wrong passwords sent in a row against the endpoint's bcrypt budget
RULE = "web"
RULES = """\
rules:
  - name: %s
    match: { proto: udp, dst_port: 80 }
    key: src
    limit: { rate: 1000/s, burst: 50 }
""" % RULE
NEEDED = ("openssl", "htpasswd", "prometheus", "curl")


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def make_certificates(work):
    """A CA and the endpoint's certificate for 127.0.0.1 signed by it; the key owner-only."""
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj",
         "/CN=fg test CA"], cwd=work)
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "metrics.key", "-out", "metrics.csr", "-subj", "/CN=127.0.0.1"], cwd=work)
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run(["openssl", "x509", "-req", "-in", "metrics.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "metrics.crt", "-days", "1", "-extfile", "san.ext"], cwd=work)
    os.chmod(os.path.join(work, "metrics.key"), 0o600)


def client_certificate(work, name, ca):
    """A client certificate and key signed by ca (its .crt and .key in work)."""
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name], cwd=work)
    run(["openssl", "x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey",
        ca + ".key", "-CAcreateserial", "-out", name + ".crt", "-days", "1"], cwd=work)


def bcrypt_hash(user, password):
    line = run(["htpasswd", "-nbBC", "10", user, password]).strip()
    return line.split(":", 1)[1]


def curl(port, *args, scheme="https"):
    """(exit code, HTTP status, headers and body) of one curl request to the endpoint."""
    p = subprocess.run(["curl", "-s", "-S", "-i", "--max-time", "20", "-w", "\n%{http_code}"] +
                       list(args) + ["%s://127.0.0.1:%d/metrics" % (scheme, port)],
                       capture_output=True, text=True, timeout=60)
    out, _, status = p.stdout.rpartition("\n")
    return p.returncode, status, out


def sample(text, line_start):
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return None


class Prometheus:
    def __init__(self, work, endpoint_port):
        self.port = free_port()
        self.work, self.process = work, None
        with open(os.path.join(work, "scrape.pass"), "w") as f:
            f.write(PASSWORD)
        with open(os.path.join(work, "wrong.pass"), "w") as f:
            f.write(PASSWORD + "-not")
        jobs = []
        for job, password_file in (("floodgate", "scrape.pass"), ("floodgate-wrong", "wrong.pass")):
            jobs.append({
                "job_name": job, "scheme": "https", "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "tls_config": {"ca_file": os.path.join(work, "ca.crt")},
                "basic_auth": {"username": USER,
                               "password_file": os.path.join(work, password_file)},
                "static_configs": [{"targets": ["127.0.0.1:%d" % endpoint_port]}]})
        self.config = os.path.join(work, "prometheus.yml")
        with open(self.config, "w") as f:  # JSON is YAML
            json.dump({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}, f)

    def start(self):
        self.process = subprocess.Popen(
            ["prometheus", "--config.file=" + self.config,
             "--storage.tsdb.path=" + os.path.join(self.work, "prometheus-data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "prometheus.log"), "w"))

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)["data"]
        except OSError:
            if self.process.poll() is not None:
                raise RuntimeError("prometheus exited with %d" % self.process.returncode)
            return None  # not listening yet

    def value(self, query):
        """The query's one value, or None while it has none."""
        data = self.api("query", query=query)
        if not data or len(data["result"]) != 1:
            return None
        return float(data["result"][0]["value"][1])

    def target(self, job):
        data = self.api("targets", state="active")
        for t in (data or {}).get("activeTargets", []):
            if t["labels"].get("job") == job and t.get("lastError"):
                return t
        return None

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def refused_at_start(work):
    bad = os.path.join(work, "bad-web.yml")
    with open(bad, "w") as f:
        f.write("tls_server_config:\n  cert_file: metrics.crt\n  key_file: metrics.key\n"
                "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n")
    p = subprocess.run([FLOODCTL, "--socket", os.path.join(work, "unused.sock"), "daemon",
                        "--metrics", "127.0.0.1:%d" % free_port(), "--web-config-file", bad],
                       capture_output=True, text=True, timeout=30)
    expected = bad + ":4: tls_server_config.cipher_suites: unknown field"
    check(p.returncode != 0 and expected in p.stderr,
          "a web config with cipher_suites is refused at start, naming file, line and field",
          "exit %d: %s" % (p.returncode, p.stderr))


def with_curl(port, work):
    """The endpoint's answers to curl; returns the refusals made, by reason."""
    ca = ["--cacert", os.path.join(work, "ca.crt")]
    code, status, out = curl(port, *ca)
    check(status == "401" and 'www-authenticate: basic realm="floodgate"' in out.lower(),
          "no credentials: 401 with WWW-Authenticate: Basic", "%d %s\n%s" % (code, status, out))
    refused = {"no_credentials": 1, "wrong_credentials": 0}
    for what, user, password in (("a wrong password", USER, "guess"),
                                 ("an unknown user", "admin", PASSWORD),
                                 ("the right password for another user", "admin" + USER, PASSWORD)):
        code, status, out = curl(port, *ca, "-u", "%s:%s" % (user, password))
        check(status == "401", "%s: 401" % what, "%d %s\n%s" % (code, status, out[:300]))
        refused["wrong_credentials"] += 1
    code, status, out = curl(port, *ca, "-H", "Authorization: Basic !!not-base64!!")
    check(status == "401", "a forged Authorization header: 401", "%d %s" % (code, status))
    refused["no_credentials"] += 1
    # libmicrohttpd answers 431 and closes; curl, still sending, may see the reset instead.
    code, status, out = curl(port, *ca, "-u", "%s:%s" % (USER, "x" * 40000))
    check(status == "431" or (status == "000" and code in (55, 56)),
          "an Authorization header of 53 KB: refused (431), never hashed (a connection without a "
          "request)",
          "%d %s" % (code, status))
    code, status, out = curl(port, scheme="http")
    check(code != 0 and status == "000", "plain HTTP to the TLS port gets no HTTP answer",
          "curl exit %d, status %s" % (code, status))
    code, status, out = curl(port, *ca, "--tls-max", "1.2", "-u", "%s:%s" % (USER, PASSWORD))
    check(code != 0 and status == "000", "TLS 1.2 is refused (min_version TLS13)",
          "curl exit %d, status %s" % (code, status))
    refused["no_request"] = 3  # the 53 KB header, plain HTTP, TLS 1.2: no request served
    refused["throttled"] = throttled_flood(port, work, refused)
    code, status, out = curl(port, *ca, "-u", "%s:%s" % (USER, PASSWORD))
    ok = status == "200"
    for reason, n in refused.items():
        got = sample(out, 'floodgate_metrics_auth_refused_total{reason="%s"}' % reason)
        ok = ok and got == n
    check(ok, "the right credentials: 200, the refusals counted by reason (%s)" % refused,
          "%s\n%s" % (status, "\n".join(l for l in out.splitlines() if "auth_refused" in l)))
    return refused


def throttled_flood(port, work, refused):
    """FLOOD wrong passwords in a row on one kept-alive TLS connection: each bcrypt-checked (401)
    while the endpoint's budget lasts (4 at once, 4 a second: control/metrics/credential_check.h),
    the rest refused unhashed (429); the right credentials, matched before, are answered all the
    same. Returns the 429s."""
    context = ssl.create_default_context(cafile=os.path.join(work, "ca.crt"))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=20)
    answers = []
    start = time.monotonic()
    for i in range(FLOOD):
        token = base64.b64encode(("%s:wrong-%d" % (USER, i)).encode()).decode()
        connection.request("GET", "/metrics", headers={"Authorization": "Basic " + token})
        response = connection.getresponse()
        response.read()
        answers.append(response.status)
    elapsed = time.monotonic() - start
    connection.close()
    status = curl(port, "--cacert", os.path.join(work, "ca.crt"), "-u",
                  "%s:%s" % (USER, PASSWORD))[1]
    throttled, wrong = answers.count(429), answers.count(401)
    budget = 4 + 4 * elapsed  # the most checks the bucket can have allowed in that time
    check(throttled + wrong == FLOOD and wrong <= budget + 1 and status == "200",
          "%d wrong passwords in %.1f s on one connection: %d checked (401, at most %.1f), %d "
          "refused unhashed (429); the right credentials still 200"
          % (FLOOD, elapsed, wrong, budget, throttled), "answers %s, then %s" % (answers, status))
    refused["wrong_credentials"] += wrong
    return throttled


def with_prometheus(prometheus, refused):
    prometheus.start()
    up = wait_until(lambda: prometheus.value('up{job="floodgate"} == 1'),
                    "Prometheus's scrape up", 60)
    check(up == 1, 'Prometheus scrapes the endpoint in TLS with basic auth: up{job="floodgate"} 1')
    dp = wait_until(lambda: prometheus.value('floodgate_dataplane_up{job="floodgate"}'),
                    "floodgate_dataplane_up scraped", 30)
    matched = wait_until(
        lambda: prometheus.value('floodgate_rule_matched_total{job="floodgate",rule="%s"}' % RULE),
        "the rule's matched count scraped", 30)
    check(dp == 1 and matched == 1,
          "Prometheus holds floodgate's series: dataplane up 1, rule %s matched the trace's 1 "
          "frame" % RULE, "dataplane_up %s, matched %s" % (dp, matched))
    no_credentials = prometheus.value(
        'floodgate_metrics_auth_refused_total{job="floodgate",reason="no_credentials"}')
    check(no_credentials == refused["no_credentials"],
          "Prometheus reads the refusals without credentials: %d" % refused["no_credentials"],
          no_credentials)
    wrong = wait_until(lambda: prometheus.value('up{job="floodgate-wrong"} == 0') is not None and
                       prometheus.target("floodgate-wrong"), "the wrong job's scrape", 60)
    # 401, or 429 if its scrape came while the flood's budget was still spent.
    check(any(code in wrong.get("lastError", "") for code in ("401", "429")),
          "a scrape with a wrong password is up 0 in Prometheus, refused 401 (or 429)",
          wrong.get("lastError"))


def with_client_certificates(work):
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "1", "-subj",
        "/CN=another CA"], cwd=work)
    client_certificate(work, "client", "ca")
    client_certificate(work, "stranger", "other-ca")
    web = os.path.join(work, "web-mtls.yml")
    with open(web, "w") as f:
        f.write("tls_server_config:\n  cert_file: metrics.crt\n  key_file: metrics.key\n"
                "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n")
    port = free_port()
    daemon = subprocess.Popen(
        [FLOODCTL, "--socket", os.path.join(work, "mtls.sock"), "daemon", "--dataplane",
         os.path.join(work, "no-dataplane.sock"), "--metrics", "127.0.0.1:%d" % port,
         "--web-config-file", web],
        stdout=open(os.path.join(work, "daemon-mtls.log"), "w"), stderr=subprocess.STDOUT)
    ca = ["--cacert", os.path.join(work, "ca.crt")]
    mine = ["--cert", os.path.join(work, "client.crt"), "--key", os.path.join(work, "client.key")]
    theirs = ["--cert", os.path.join(work, "stranger.crt"),
              "--key", os.path.join(work, "stranger.key")]
    try:
        out = wait_until(lambda: curl(port, *ca, *mine)[1] == "200" and curl(port, *ca, *mine),
                         "the second daemon's endpoint", 30)
        check(sample(out[2], "floodgate_dataplane_up") == 0,
              "client certificate from the CA: 200 (the metrics, dataplane down)", out[1])
        answers = [curl(port, *ca)[1], curl(port, *ca, *theirs)[1]]
        _, status, out = curl(port, *ca, *mine)
        counted = sample(out, 'floodgate_metrics_auth_refused_total{reason="client_certificate"}')
        check(answers == ["403", "403"] and counted == 2,
              "no client certificate, and one from another CA: 403 each, 2 counted",
              "answers %s, counted %s" % (answers, counted))
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    missing = [p for p in NEEDED if shutil.which(p) is None]
    if missing:
        check(False, "installed: " + ", ".join(NEEDED), "missing: " + ", ".join(missing))
        return plan()  # 1: a check failed
    work = tempfile.mkdtemp(prefix="fg-metrics-tls-")
    make_certificates(work)
    web = os.path.join(work, "web.yml")
    with open(web, "w") as f:
        f.write("tls_server_config:\n  cert_file: metrics.crt\n  key_file: metrics.key\n"
                "  min_version: TLS13\nbasic_auth_users:\n  %s: '%s'\n"
                % (USER, bcrypt_hash(USER, PASSWORD)))
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES)
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.1", "198.18.255.1", 1024, 80)])
    port = free_port()
    box = Box(work, "A", rules, trace, 1 if os.cpu_count() > 1 else 0)
    box.dataplane_cmd = [x.replace(",infinite_rx=1", "") for x in box.dataplane_cmd]
    box.daemon_cmd = box.daemon_cmd[:-2] + ["--metrics", "127.0.0.1:%d" % port,
                                            "--web-config-file", web]
    prometheus = Prometheus(work, port)
    try:
        refused_at_start(work)
        box.start_dataplane()
        wait_until(box.up, "the dataplane", 60)
        box.start_daemon()
        # Up once the endpoint answers the right credentials with the dataplane's families.
        wait_until(lambda: sample(curl(port, "--cacert", os.path.join(work, "ca.crt"), "-u",
                                       "%s:%s" % (USER, PASSWORD))[2],
                                  "floodgate_dataplane_up") == 1, "the endpoint", 30)
        refused = with_curl(port, work)
        with_prometheus(prometheus, refused)
        with_client_certificates(work)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        prometheus.stop()
        box.close()
    return finish(work, ("dataplane-A.err", "daemon-A.log", "prometheus.log", "daemon-mtls.log"))


if __name__ == "__main__":
    sys.exit(main())
