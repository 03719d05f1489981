package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writeServiceAccountKeys writes an RSA 2048 key pair for service-account
// tokens: key (PKCS#1 PEM) and pub (PKIX PEM).
func writeServiceAccountKeys(key, pub string) error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

type tokenUser struct {
	token, user, uid string
	groups           []string
}

// writeTokenFile writes a kube-apiserver static token file.
func writeTokenFile(path string, users []tokenUser) error {
	var sb strings.Builder
	for _, u := range users {
		fmt.Fprintf(&sb, "%s,%s,%s,\"%s\"\n", u.token, u.user, u.uid, strings.Join(u.groups, ","))
	}
	return os.WriteFile(path, []byte(sb.String()), 0o600)
}

// kubeconfig returns a kubeconfig for server authenticating with token.
// The apiserver's serving certificate is self-signed, so TLS verification
// is off: everything is on 127.0.0.1.
func kubeconfig(server, user, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: sidebench
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: sidebench
  context:
    cluster: sidebench
    user: %s
current-context: sidebench
`, server, user, token, user)
}

func writeKubeconfig(path, server, user, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(kubeconfig(server, user, token)), 0o600)
}

// ca is a certificate authority of one cluster, in memory: its key is
// never written, so nothing but Up can sign with it.
type ca struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
	next int64 // serial number of the next certificate
}

// newCA makes a CA named cn. ECDSA P-256 keeps each key to a few
// milliseconds.
func newCA(cn string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock steps
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &ca{cert: cert, der: der, key: key, next: 2}, nil
}

// writeCert writes the CA's certificate (public) to path.
func (c *ca) writeCert(path string) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der}), 0o644)
}

// leaf describes a certificate the CA issues.
type leaf struct {
	cn     string
	orgs   []string
	server bool // serverAuth, for the SANs below
	client bool // clientAuth
	ips    []net.IP
	dns    []string
}

// issue writes a certificate for l (cert, 0644) and its key (key, 0600).
func (c *ca) issue(l leaf, cert, key string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(c.next),
		Subject:      pkix.Name{CommonName: l.cn, Organization: l.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		IPAddresses:  l.ips,
		DNSNames:     l.dns,
	}
	c.next++
	if l.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &k.PublicKey, c.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeKubeletClientPKI writes a small CA (caCert) and a client certificate
// signed by it (cert, key) for kube-apiserver's connections to the
// kubelets: the kubelet trusts caCert (authentication.x509.clientCAFile)
// and the apiserver presents cert/key (--kubelet-client-certificate/-key),
// so `kubectl logs/exec` work with anonymous kubelet access off. The
// client is in group system:masters; the kubelets authorize with
// AlwaysAllow anyway (they listen on loopback only).
func writeKubeletClientPKI(caCert, cert, key string) error {
	c, err := newCA("sidebench-kubelet-client-ca")
	if err != nil {
		return err
	}
	if err := c.writeCert(caCert); err != nil {
		return err
	}
	return c.issue(leaf{cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true}, cert, key)
}

// etcdPKI are the files of etcd's TLS, as kubeadm lays them out
// (pki/etcd/ and pki/apiserver-etcd-client.*): etcd serves its client and
// peer URLs with certificates of its own CA and accepts only clients
// with a certificate of that CA (--client-cert-auth); the apiserver and
// sidebench's health check present one.
type etcdPKI struct {
	CA, ServerCert, ServerKey, PeerCert, PeerKey string
	// APIServerCert/Key: kube-apiserver's client certificate.
	APIServerCert, APIServerKey string
	// HealthCert/Key: the client certificate of Up's health check.
	HealthCert, HealthKey string
}

func etcdPKIIn(pkiDir string) etcdPKI {
	e := filepath.Join(pkiDir, "etcd")
	return etcdPKI{
		CA:         filepath.Join(e, "ca.crt"),
		ServerCert: filepath.Join(e, "server.crt"), ServerKey: filepath.Join(e, "server.key"),
		PeerCert: filepath.Join(e, "peer.crt"), PeerKey: filepath.Join(e, "peer.key"),
		APIServerCert: filepath.Join(pkiDir, "apiserver-etcd-client.crt"), APIServerKey: filepath.Join(pkiDir, "apiserver-etcd-client.key"),
		HealthCert: filepath.Join(e, "healthcheck-client.crt"), HealthKey: filepath.Join(e, "healthcheck-client.key"),
	}
}

// writeEtcdPKI makes etcd's CA and every certificate of p. The serving
// and peer certificates name 127.0.0.1 and localhost only: etcd listens
// on loopback.
func writeEtcdPKI(p etcdPKI) error {
	if err := os.MkdirAll(filepath.Dir(p.CA), 0o700); err != nil {
		return err
	}
	c, err := newCA("sidebench-etcd-ca")
	if err != nil {
		return err
	}
	if err := c.writeCert(p.CA); err != nil {
		return err
	}
	loop := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, x := range []struct {
		l         leaf
		cert, key string
	}{
		{leaf{cn: "sidebench-etcd", server: true, client: true, ips: loop, dns: []string{"localhost"}}, p.ServerCert, p.ServerKey},
		{leaf{cn: "sidebench-etcd", server: true, client: true, ips: loop, dns: []string{"localhost"}}, p.PeerCert, p.PeerKey},
		{leaf{cn: "kube-apiserver-etcd-client", client: true}, p.APIServerCert, p.APIServerKey},
		{leaf{cn: "kube-etcd-healthcheck-client", client: true}, p.HealthCert, p.HealthKey},
	} {
		if err := c.issue(x.l, x.cert, x.key); err != nil {
			return err
		}
	}
	return nil
}

// tlsConfig is a client configuration for etcd with cert/key, verifying
// etcd's serving certificate against p.CA.
func (p etcdPKI) tlsConfig(cert, key string) (*tls.Config, error) {
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("localcluster: no certificate in %s", p.CA)
	}
	return &tls.Config{Certificates: []tls.Certificate{kp}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
