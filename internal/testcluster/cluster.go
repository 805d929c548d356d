// Package testcluster runs a real kube-apiserver (with etcd) on 127.0.0.1 for end-to-end tests,
// and a fake kubelet that serves container logs through it. No scheduler or controllers run:
// tests write status themselves.
//
// The binaries come from $CORONER_KUBE_APISERVER and $CORONER_ETCD (scripts/kube-apiserver.sh
// builds the first; `make e2e` sets both). Without them the tests are skipped, unless
// $CORONER_E2E=1 says they must run.
package testcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Users with bearer tokens. Admin is in system:masters; Collector gets only what a test binds.
const (
	AdminToken     = "admin-token-0123456789"
	CollectorToken = "collector-token-0123456789"
	CollectorUser  = "coroner-collector"
)

// Cluster is a running kube-apiserver.
type Cluster struct {
	URL   string
	Admin *rest.Config
	Kube  kubernetes.Interface
	Dyn   dynamic.Interface
	dir   string
	gvrs  sync.Map // "group/version/Kind" -> resource

	namespaces sync.Map // created
}

// Start runs etcd and kube-apiserver for the test and stops them when it ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	apiserver, etcd := os.Getenv("CORONER_KUBE_APISERVER"), os.Getenv("CORONER_ETCD")
	if apiserver == "" || etcd == "" {
		if os.Getenv("CORONER_E2E") == "1" {
			t.Fatal("CORONER_E2E=1 but CORONER_KUBE_APISERVER or CORONER_ETCD is not set (run `make e2e`)")
		}
		t.Skip("no kube-apiserver: set CORONER_KUBE_APISERVER and CORONER_ETCD, or run `make e2e`")
	}
	dir := t.TempDir()
	c := &Cluster{dir: dir}

	etcdClient, etcdPeer := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	start(t, dir, "etcd", etcd,
		"--name=test", "--data-dir="+etcdDataDir(t, dir),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--log-level=warn")

	writeFile(t, filepath.Join(dir, "tokens.csv"), fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,%s,collector-uid\n", AdminToken, CollectorToken, CollectorUser))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	writeFile(t, filepath.Join(dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(t, filepath.Join(dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))

	port := freePort(t)
	start(t, dir, "kube-apiserver", apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-timeout=5s",
	)
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	c.Admin = c.Config(AdminToken)
	c.waitReady(t)
	c.Kube = kubernetes.NewForConfigOrDie(c.Admin)
	c.Dyn = dynamic.NewForConfigOrDie(c.Admin)
	return c
}

// etcdDataDir is where etcd keeps its data: in memory (/dev/shm) when the machine has it, so
// that each write's fsync costs nothing (etcd 3.4 has no --unsafe-no-fsync); else in dir.
func etcdDataDir(t testing.TB, dir string) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "coroner-etcd-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return filepath.Join(d, "etcd")
		}
	}
	return filepath.Join(dir, "etcd")
}

// Config is a client config for a user's token.
func (c *Cluster) Config(token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
}

// Kubeconfig writes a kubeconfig for a token, with the given context name and default namespace.
func (c *Cluster) Kubeconfig(t testing.TB, token, context, namespace string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "user", Namespace: namespace}
	cfg.CurrentContext = context
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *Cluster) waitReady(t testing.TB) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+AdminToken)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("kube-apiserver not ready after 90s; its log:\n%s", tail(filepath.Join(c.dir, "kube-apiserver.log")))
}

// start runs a server process for the test's lifetime, logging to dir/<name>.log.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "ETCD_UNSUPPORTED_ARCH=")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, tail(logf.Name()))
		}
	})
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ctx is a bounded context for setup calls.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
