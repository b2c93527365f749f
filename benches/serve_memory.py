# 64 (or N) concurrent 4 MB uploads to `ratchet serve`; prints RSS before,
# peak (VmHWM) and after. Usage: measure.py BIN N KIND(tiny|big)
import json, os, socket, subprocess, sys, tempfile, threading, time, http.client
BIN, N, KIND = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = tempfile.mkdtemp(prefix="memm-")
store = os.path.join(d, "store"); sock = os.path.join(d, "s.sock")
def run(*a):
    return subprocess.run([BIN, "--store", store, "--json", *a], capture_output=True, text=True, check=True).stdout
subprocess.run([BIN, "--store", store, "init"], capture_output=True, check=True, cwd=d)
quota = [] if os.environ.get("DEFAULT_QUOTA") else ["--max-events", "100000000", "--max-bytes", "100000000000",
                     "--events-per-hour", "100000000", "--bytes-per-hour", "100000000000"]
tok = json.loads(run("token", "mint", "--can", "record", "--session", "m", *quota))["token"]
srv = subprocess.Popen([BIN, "--store", store, "--json", "serve", "--socket", sock, "--rate", "100000", "--burst", "100000", "--request-timeout", "600"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
srv.stdout.readline()
def rss(field):
    for l in open(f"/proc/{srv.pid}/status"):
        if l.startswith(field): return int(l.split()[1]) / 1024
if KIND == "tiny":
    line = '{"kind":"note","payload":{"n":1}}\n'
else:
    line = '{"kind":"note","payload":{"t":"' + "x" * 4000 + '"}}\n'
body = (line * (4_000_000 // len(line))).encode()
class U(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sock)
before = rss("VmRSS")
statuses = []
def up(i):
    c = U("x", timeout=900)
    c.request("POST", f"/v1/events?request_id=m{i}", body, {"Authorization": "Bearer " + tok, "Content-Type": "application/x-ndjson"})
    r = c.getresponse(); r.read(); statuses.append(r.status)
t0 = time.time()
ts = [threading.Thread(target=up, args=(i,)) for i in range(N)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps({"n": N, "kind": KIND, "body_mb": len(body) / 1e6, "events_per_body": len(body) // len(line),
                  "rss_before_mb": round(before, 1), "peak_mb": round(rss("VmHWM"), 1), "rss_after_mb": round(rss("VmRSS"), 1), "anon_after_mb": round(rss("RssAnon"), 1),
                  "statuses": {s: statuses.count(s) for s in set(statuses)}, "secs": round(time.time() - t0, 1)}))
srv.terminate(); srv.wait()
# restart: what a new server holds for what was stored
srv = subprocess.Popen([BIN, "--store", store, "--json", "serve", "--socket", sock], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
t0 = time.time(); srv.stdout.readline()
print(json.dumps({"restart_rss_mb": round(rss("VmRSS"), 1), "restart_anon_mb": round(rss("RssAnon"), 1), "restart_file_mb": round(rss("RssFile"), 1), "restart_peak_mb": round(rss("VmHWM"), 1), "restart_secs": round(time.time() - t0, 1)}))
srv.terminate(); srv.wait()
subprocess.run(["rm", "-rf", d])
