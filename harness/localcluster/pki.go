package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
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

// writeKubeletClientPKI writes a small CA (caCert) and a client certificate
// signed by it (cert, key) for kube-apiserver's connections to the
// kubelets: the kubelet trusts caCert (authentication.x509.clientCAFile)
// and the apiserver presents cert/key (--kubelet-client-certificate/-key),
// so `kubectl logs/exec` work with anonymous kubelet access off. The
// client is in group system:masters; the kubelets authorize with
// AlwaysAllow anyway (they listen on loopback only). ECDSA P-256 keeps
// this to a few milliseconds. The CA key is not written: nothing else is
// ever signed.
func writeKubeletClientPKI(caCert, cert, key string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sidebench-kubelet-client-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock steps
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(caCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientDER}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
