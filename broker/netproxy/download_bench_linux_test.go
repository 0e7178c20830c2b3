package netproxy

import (
	"cmp"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/broker/sandbox"
)

// BenchmarkDownload100MB is a 100 MB download from a loopback server (127.0.0.2: the proxy variables leave
// 127.0.0.1 direct), direct and through the proxy (plain HTTP forwarded, HTTPS through a CONNECT tunnel), the proxy
// on a unix socket as the broker runs it; then by curl, unsandboxed and direct, and sandboxed through the sandbox's
// pid 1 forwarder and the proxy. On loopback nothing but the CPU bounds a download, so this is the relays' worst
// case: their copies take cycles from the client's and the server's (and their TLS) on the same two cores.
// BenchmarkDownloadLink measures behind a link, as a download from the internet is.
func BenchmarkDownload100MB(b *testing.B) {
	plain, secure := origins(b, func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			b.Skipf("cannot listen on 127.0.0.2: %v", err)
		}
		return ln
	})
	sock := serveUnix(b, "127.0.0.2")
	benchDownloads(b, plain, secure, sock)
	benchCurl(b, plain.URL, secure.URL, sock)
}

const downloadSize = 100 << 20

// origins serves downloadSize bytes over HTTP and HTTPS, each on a listener of listen.
func origins(b *testing.B, listen func() net.Listener) (plain, secure *httptest.Server) {
	chunk := make([]byte, 256<<10)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for n := 0; n < downloadSize; n += len(chunk) {
			w.Write(chunk)
		}
	})
	plain, secure = httptest.NewUnstartedServer(handler), httptest.NewUnstartedServer(handler)
	plain.Listener.Close()
	secure.Listener.Close()
	plain.Listener, secure.Listener = listen(), listen()
	plain.Start()
	secure.StartTLS()
	b.Cleanup(plain.Close)
	b.Cleanup(secure.Close)
	return plain, secure
}

func benchDownloads(b *testing.B, plain, secure *httptest.Server, proxySocket string) {
	tlsConf := secure.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.ServerName = "example.com" // in httptest's certificate, whatever address the server has
	for _, c := range []struct {
		name, url string
		c         *http.Client
	}{
		{"direct-http", plain.URL, &http.Client{}},
		{"proxy-http", plain.URL, unixClient(proxySocket, nil)},
		{"direct-https", secure.URL, &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}},
		{"proxy-connect-https", secure.URL, unixClient(proxySocket, tlsConf)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(downloadSize)
			for b.Loop() {
				resp, err := c.c.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != downloadSize {
					b.Fatalf("%d bytes", n)
				}
				resp.Body.Close()
			}
		})
	}
}

// serveUnix runs a proxy on a unix socket, as the broker does for a command, allowing the hosts in allow.
func serveUnix(b *testing.B, allow ...string) string {
	sock := filepath.Join(b.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	p := &Proxy{Dialer: &netguard.Dialer{}, Record: func(Conn) {},
		Decide: func(_ context.Context, host string, _ uint16) (netguard.Reach, error) {
			for _, a := range allow {
				if a == host {
					return netguard.Reach{Private: true}, nil
				}
			}
			return netguard.Reach{}, fmt.Errorf("%s is not allowed", host)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx, ln); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return sock
}

// unixClient is an HTTP client whose proxy is the unix socket sock.
func unixClient(sock string, tlsConf *tls.Config) *http.Client {
	const proxyAddr = "garuda-proxy.invalid:80"
	pu, _ := url.Parse("http://" + proxyAddr)
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsConf,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != proxyAddr {
				return nil, fmt.Errorf("the benchmark's client dials only its proxy, not %s", addr)
			}
			return d.DialContext(ctx, "unix", sock)
		}}}
}

// linkChild marks the benchmark's own re-execution inside a network namespace it made.
const linkChild = "GARUDA_NETPROXY_LINK_CHILD"

// BenchmarkDownloadLink is BenchmarkDownload100MB with the servers behind a link, as a download from the internet
// is: they run in a network namespace of their own, joined to the client's and the proxy's by a veth pair shaped to
// GARUDA_BENCH_LINK (tc tbf; default 1gbit). Both namespaces are the benchmark's own (it re-executes itself in a
// new one), and the addresses are 127.200.0.1 and .2 on the veth, so nothing reaches any other network. Needs root,
// ip, tc and unshare; otherwise it is skipped.
func BenchmarkDownloadLink(b *testing.B) {
	rate := cmp.Or(os.Getenv("GARUDA_BENCH_LINK"), "1gbit")
	if os.Getenv(linkChild) == "" {
		if os.Geteuid() != 0 {
			b.Skip("needs root: it makes network namespaces and a veth pair")
		}
		for _, tool := range []string{"ip", "tc", "unshare"} {
			if _, err := exec.LookPath(tool); err != nil {
				b.Skipf("needs %s: %v", tool, err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkDownloadLink$", "-test.count=1",
			"-test.benchtime="+flag.Lookup("test.benchtime").Value.String())
		cmd.Env = append(os.Environ(), linkChild+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "BenchmarkDownloadLink/") || strings.Contains(l, "FAIL") || strings.Contains(l, "_test.go:") {
				fmt.Println(l)
			}
		}
		if err != nil {
			b.Fatalf("the benchmark in its network namespace: %v", err)
		}
		b.Skipf("measured at %s in a network namespace of its own: the lines above", rate)
	}

	// The servers' namespace, held by a sleeping process, and the veth pair between it and this one.
	hold := exec.Command("unshare", "--net", "sleep", "3600")
	hold.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := hold.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hold.Process.Kill(); hold.Wait() })
	pid := strconv.Itoa(hold.Process.Pid)
	nsPath := "/proc/" + pid + "/ns/net"
	waitOtherNetns(b, nsPath)
	sh(b, "ip link add gv0 type veth peer name gv1 netns "+pid)
	// 127.200.0.0/24 goes over the veth: loopback keeps only 127.0.0.1, and route_localnet lets 127/8 on a device.
	setup := func(prefix []string, dev, addr string) {
		for _, c := range []string{
			"sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf." + dev + ".route_localnet=1",
			"ip link set lo up",
			"ip route del 127.0.0.0/8 dev lo table local",
			"ip addr add " + addr + "/24 dev " + dev,
			"ip link set " + dev + " up",
			"tc qdisc add dev " + dev + " root tbf rate " + rate + " burst 4mb latency 50ms",
		} {
			sh(b, strings.Join(append(prefix, c), " "))
		}
	}
	setup(nil, "gv0", "127.200.0.1")
	setup([]string{"nsenter", "--net=" + nsPath}, "gv1", "127.200.0.2")

	plain, secure := origins(b, func() net.Listener { return listenIn(b, nsPath, "127.200.0.2:0") })
	sock := serveUnix(b, "127.200.0.2")
	benchDownloads(b, plain, secure, sock)
	benchCurl(b, plain.URL, secure.URL, sock)
}

// benchCurl downloads with curl, unsandboxed and direct, then sandboxed, where the only way out is the sandbox's
// pid 1 forwarder (the command's 127.0.0.1 to the proxy's socket) and the proxy. curl-MB/s is curl's own
// speed_download, which leaves out the sandbox's start.
func benchCurl(b *testing.B, plainURL, secureURL, sock string) {
	if _, err := exec.LookPath("curl"); err != nil {
		b.Log("no curl: the sandboxed downloads are not measured")
		return
	}
	root, tmp := b.TempDir(), b.TempDir()
	for _, c := range []struct {
		name, url string
		sandboxed bool
	}{
		{"curl-direct-http", plainURL, false},
		{"curl-sandboxed-http", plainURL, true},
		{"curl-direct-https", secureURL, false},
		{"curl-sandboxed-connect-https", secureURL, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := sandbox.Spec{Command: "curl -sSk --fail -o /dev/null -w '%{size_download} %{speed_download}' " + c.url,
				Root: root, Writable: []string{tmp}, Env: sandbox.BaseEnv(tmp, tmp, nil), Unsandboxed: !c.sandboxed}
			if c.sandboxed {
				s.Proxy = sock
			}
			b.SetBytes(downloadSize)
			var speed float64
			for b.Loop() {
				r, err := sandbox.Run(context.Background(), s)
				if err != nil || r.ExitCode != 0 {
					b.Fatalf("%v %+v %s", err, r, r.Output)
				}
				var n int64
				var v float64
				if _, err := fmt.Sscan(strings.TrimSpace(string(r.Output)), &n, &v); err != nil || n != downloadSize {
					b.Fatalf("curl said %q", r.Output)
				}
				speed += v
			}
			b.ReportMetric(speed/float64(b.N)/1e6, "curl-MB/s")
		})
	}
}

// listenIn listens on addr inside the network namespace at nsPath: a socket stays in the namespace it was made in,
// so one thread enters it for the listen and comes back.
func listenIn(b *testing.B, nsPath, addr string) net.Listener {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		b.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open(nsPath)
	if err != nil {
		b.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		b.Fatal(err)
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		b.Fatal(err) // the thread stays locked, and ends with this goroutine
	}
	runtime.UnlockOSThread()
	if lerr != nil {
		b.Fatal(lerr)
	}
	return ln
}

// waitOtherNetns waits until the process at nsPath has its own network namespace (unshare has run).
func waitOtherNetns(b *testing.B, nsPath string) {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if other, err := os.Readlink(nsPath); err == nil && other != self {
			return
		}
		runtime.Gosched()
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	b.Fatalf("%s never got a network namespace of its own", nsPath)
}

func sh(b *testing.B, command string) {
	b.Helper()
	if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", command, err, out)
	}
}
