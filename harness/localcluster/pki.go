package localcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
