package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSOptions make a server accept TLS connections only (Options.TLS): the plain port is
// closed (port 0) and the server listens with tls-port on its Port.
type TLSOptions struct {
	// AuthClients is tls-auth-clients: "yes" (clients must present a certificate signed by
	// the test CA), "optional" or "no". Defaults to "yes", Redis's own default.
	AuthClients string
}

// tlsFiles are the PEM files of a TLS server, written into its directory, and the client
// configuration that trusts them.
type tlsFiles struct {
	ca, cert, key         string // the CA and the server's certificate and key
	clientCert, clientKey string // a client certificate signed by the same CA
	authClients           string
	client                *tls.Config
}

// writeTLS generates a self-signed CA, a server certificate for 127.0.0.1 and localhost, and
// a client certificate, all signed by that CA, into dir. Keys are ECDSA P-256: fast to make,
// so every TLS test gets fresh ones. Nothing leaves the temporary directory.
func writeTLS(dir string, opts TLSOptions) (*tlsFiles, error) {
	if opts.AuthClients == "" {
		opts.AuthClients = "yes"
	}
	switch opts.AuthClients {
	case "yes", "optional", "no":
	default:
		return nil, fmt.Errorf("redistest: TLSOptions.AuthClients must be yes, optional or no, not %q", opts.AuthClients)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "relq redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (certDER []byte, key *ecdsa.PrivateKey, err error) {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		certDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return certDER, key, err
	}
	serverDER, serverKey, err := leaf(2, "relq redistest server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	clientDER, clientKey, err := leaf(3, "relq redistest client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}

	f := &tlsFiles{
		ca:          filepath.Join(dir, "ca.crt"),
		cert:        filepath.Join(dir, "server.crt"),
		key:         filepath.Join(dir, "server.key"),
		clientCert:  filepath.Join(dir, "client.crt"),
		clientKey:   filepath.Join(dir, "client.key"),
		authClients: opts.AuthClients,
	}
	if err := writePEM(f.ca, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	if err := writePEM(f.cert, "CERTIFICATE", serverDER); err != nil {
		return nil, err
	}
	if err := writeKey(f.key, serverKey); err != nil {
		return nil, err
	}
	if err := writePEM(f.clientCert, "CERTIFICATE", clientDER); err != nil {
		return nil, err
	}
	if err := writeKey(f.clientKey, clientKey); err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	f.client = &tls.Config{
		RootCAs:      roots,
		Certificates: []tls.Certificate{pair},
		ServerName:   "127.0.0.1", // verified against the certificate's IP SAN
		MinVersion:   tls.VersionTLS12,
	}
	return f, nil
}

// configLines are the redis.conf lines that serve TLS on port.
func (f *tlsFiles) configLines(port int) []string {
	return []string{
		"tls-port " + fmt.Sprint(port),
		"tls-cert-file " + f.cert,
		"tls-key-file " + f.key,
		"tls-ca-cert-file " + f.ca,
		"tls-auth-clients " + f.authClients,
	}
}

// cliFlags are redis-cli's flags for this server.
func (f *tlsFiles) cliFlags() string {
	return fmt.Sprintf("--tls --cacert %s --cert %s --key %s", f.ca, f.clientCert, f.clientKey)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

// TLS reports whether the server accepts TLS connections only (Options.TLS).
func (s *Server) TLS() bool { return s.tls != nil }

// ClientTLS returns a go-redis TLS configuration for the server: it trusts the test CA and
// presents the client certificate (needed when AuthClients is "yes"). Each call returns a
// copy the caller may change. It returns nil for a server without TLS.
func (s *Server) ClientTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.client.Clone()
}

// CAFile returns the path of the test CA's certificate (PEM), for tools such as redis-cli.
// It returns "" for a server without TLS.
func (s *Server) CAFile() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.ca
}
