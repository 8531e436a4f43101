// This file checks the TLS configurations by running real TLS 1.3
// handshakes with crypto/tls over loopback TCP: the server side always uses a
// machine's ServerConfig, the dialing side either a machine's
// PeerConfig(expect) or a client's ClientConfig(ca.crt). After its handshake
// the server writes one byte and the dialer reads it, so a refusal the
// server decides only after the dialer's handshake has returned (TLS 1.3
// client certificates) still reaches the dialer as an error; deadlines keep
// a stuck handshake from hanging the test. It checks that a peer connects
// when the server's certificate names the node it expects, that it gets
// ErrWrongNode when the certificate names another node, ErrNoNodeID when it
// names none, and an unknown-authority error when another CA signed it; that
// the server learns the dialing machine's node id with PeerNodeID; that a
// client without a certificate connects (VerifyClientCertIfGiven) and
// PeerNodeID then says ErrNoNodeID; that a client checks the server's name
// against the certificate's SANs; and that a certificate from another CA
// presented by a client is refused by the server (and, merely held, is not
// presented at all).
package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"testing"
	"time"
)

const handshakeTimeout = 10 * time.Second

// handshake runs one TLS handshake between a server with srvCfg and a dialer
// with dialCfg over a loopback TCP connection. It returns the server's view
// of the connection and each side's error (handshake, then the one-byte
// exchange).
func handshake(t *testing.T, srvCfg, dialCfg *tls.Config) (srvState tls.ConnectionState, srvErr, dialErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	deadline := time.Now().Add(handshakeTimeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := ln.Accept()
		if err != nil {
			srvErr = err
			return
		}
		defer raw.Close()
		_ = raw.SetDeadline(deadline)
		s := tls.Server(raw, srvCfg)
		if srvErr = s.Handshake(); srvErr != nil {
			return
		}
		srvState = s.ConnectionState()
		_, srvErr = s.Write([]byte{'k'})
	}()
	raw, err := net.DialTimeout("tcp", ln.Addr().String(), handshakeTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = raw.SetDeadline(deadline)
	c := tls.Client(raw, dialCfg)
	dialErr = c.Handshake()
	if dialErr == nil {
		var b [1]byte
		_, dialErr = io.ReadFull(c, b[:])
	}
	_ = raw.Close()
	<-done
	return srvState, srvErr, dialErr
}

// clientConfig is ClientConfig over ca's certificate, dialing serverName.
func clientConfig(t *testing.T, ca *CA, serverName string) *tls.Config {
	t.Helper()
	cfg, err := ClientConfig(ca.CertPEM())
	if err != nil {
		t.Fatalf("ClientConfig: %v", err)
	}
	cfg.ServerName = serverName
	return cfg
}

func TestPeerHandshakeExpectedNode(t *testing.T) {
	ca := newTestCA(t, "test")
	server, dialer := issueTestNode(t, ca, 0xa1), issueTestNode(t, ca, 0xb2)

	srvState, srvErr, dialErr := handshake(t, server.ServerConfig(), dialer.PeerConfig(0xa1))

	if dialErr != nil || srvErr != nil {
		t.Fatalf("handshake: dialer %v, server %v", dialErr, srvErr)
	}
	if srvState.Version != tls.VersionTLS13 {
		t.Errorf("TLS version %x, want 1.3", srvState.Version)
	}
	id, err := PeerNodeID(srvState)
	if err != nil || id != 0xb2 {
		t.Errorf("server: PeerNodeID = %016x, %v; want 00000000000000b2", id, err)
	}
}

func TestPeerHandshakeWrongNode(t *testing.T) {
	ca := newTestCA(t, "test")
	server, dialer := issueTestNode(t, ca, 0xa1), issueTestNode(t, ca, 0xb2)

	_, srvErr, dialErr := handshake(t, server.ServerConfig(), dialer.PeerConfig(0xc3))

	if !errors.Is(dialErr, ErrWrongNode) {
		t.Errorf("dialer: err %v, want ErrWrongNode", dialErr)
	}
	if srvErr == nil {
		t.Error("server: handshake with a dialer that refused it succeeded")
	}
}

func TestPeerHandshakeServerWithoutNodeID(t *testing.T) {
	ca := newTestCA(t, "test")
	dialer := issueTestNode(t, ca, 0xb2)
	certPEM, keyPEM := issueWithURIs(t, ca, []*url.URL{mustParseURL(t, "https://example.test/")})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := dialer.ServerConfig() // the dialer's pool, a certificate without node id
	srvCfg.Certificates = []tls.Certificate{pair}

	_, _, dialErr := handshake(t, srvCfg, dialer.PeerConfig(0xa1))

	if !errors.Is(dialErr, ErrNoNodeID) {
		t.Errorf("dialer: err %v, want ErrNoNodeID", dialErr)
	}
}

func TestPeerHandshakeServerOfAnotherCA(t *testing.T) {
	ours, theirs := newTestCA(t, "ours"), newTestCA(t, "theirs")
	server, dialer := issueTestNode(t, theirs, 0xa1), issueTestNode(t, ours, 0xb2)

	_, srvErr, dialErr := handshake(t, server.ServerConfig(), dialer.PeerConfig(0xa1))

	if dialErr == nil {
		t.Fatal("dialer: accepted a server certificate from another CA that names the expected node")
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(dialErr, &unknown) {
		t.Errorf("dialer: err %v, want an x509.UnknownAuthorityError", dialErr)
	}
	if errors.Is(dialErr, ErrWrongNode) {
		t.Errorf("dialer: err %v is ErrWrongNode: a foreign certificate is not a genuine one", dialErr)
	}
	if srvErr == nil {
		t.Error("server: handshake with a dialer that refused it succeeded")
	}
}

// presentAlways makes a dialer present cert whatever CAs the server lists
// as acceptable. crypto/tls by itself leaves out a certificate no listed CA
// issued, which would let the server never see the foreign certificate.
func presentAlways(cert tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
}

func TestPeerHandshakeDialerOfAnotherCA(t *testing.T) {
	ours, theirs := newTestCA(t, "ours"), newTestCA(t, "theirs")
	server, dialer := issueTestNode(t, ours, 0xa1), issueTestNode(t, theirs, 0xb2)
	dialCfg := dialer.PeerConfig(0xa1)
	dialCfg.VerifyConnection = nil // let the dialer accept the server; the server must still refuse it
	dialCfg.GetClientCertificate = presentAlways(dialer.Cert)

	_, srvErr, dialErr := handshake(t, server.ServerConfig(), dialCfg)

	var unknown x509.UnknownAuthorityError
	if !errors.As(srvErr, &unknown) {
		t.Errorf("server: err %v, want an x509.UnknownAuthorityError", srvErr)
	}
	if dialErr == nil {
		t.Error("dialer: connected although the server refused its certificate")
	}
}

func TestClientHandshakeWithoutCertificate(t *testing.T) {
	ca := newTestCA(t, "test")
	server := issueTestNode(t, ca, 0xa1, "127.0.0.1:7000", "db.paros.test")

	srvState, srvErr, dialErr := handshake(t, server.ServerConfig(), clientConfig(t, ca, "db.paros.test"))

	if dialErr != nil || srvErr != nil {
		t.Fatalf("handshake: client %v, server %v", dialErr, srvErr)
	}
	if id, err := PeerNodeID(srvState); !errors.Is(err, ErrNoNodeID) {
		t.Errorf("server: PeerNodeID of a certificate-less client = %016x, %v; want ErrNoNodeID", id, err)
	}
}

func TestClientHandshakeByIP(t *testing.T) {
	ca := newTestCA(t, "test")
	server := issueTestNode(t, ca, 0xa1, "127.0.0.1:7000", "db.paros.test")

	_, srvErr, dialErr := handshake(t, server.ServerConfig(), clientConfig(t, ca, "127.0.0.1"))

	if dialErr != nil || srvErr != nil {
		t.Fatalf("handshake: client %v, server %v", dialErr, srvErr)
	}
}

func TestClientHandshakeWrongServerName(t *testing.T) {
	ca := newTestCA(t, "test")
	server := issueTestNode(t, ca, 0xa1, "db.paros.test")

	_, _, dialErr := handshake(t, server.ServerConfig(), clientConfig(t, ca, "other.paros.test"))

	var hostErr x509.HostnameError
	if !errors.As(dialErr, &hostErr) {
		t.Errorf("client: err %v, want an x509.HostnameError", dialErr)
	}
}

func TestClientHandshakeServerOfAnotherCA(t *testing.T) {
	ours, theirs := newTestCA(t, "ours"), newTestCA(t, "theirs")
	server := issueTestNode(t, theirs, 0xa1, "db.paros.test")

	_, _, dialErr := handshake(t, server.ServerConfig(), clientConfig(t, ours, "db.paros.test"))

	var unknown x509.UnknownAuthorityError
	if !errors.As(dialErr, &unknown) {
		t.Errorf("client: err %v, want an x509.UnknownAuthorityError", dialErr)
	}
}

func TestClientHandshakeCertificateOfAnotherCA(t *testing.T) {
	ours, theirs := newTestCA(t, "ours"), newTestCA(t, "theirs")
	server := issueTestNode(t, ours, 0xa1, "db.paros.test")
	foreign := issueTestNode(t, theirs, 0xb2)
	cfg := clientConfig(t, ours, "db.paros.test")
	cfg.GetClientCertificate = presentAlways(foreign.Cert)

	_, srvErr, dialErr := handshake(t, server.ServerConfig(), cfg)

	var unknown x509.UnknownAuthorityError
	if !errors.As(srvErr, &unknown) {
		t.Errorf("server: err %v, want an x509.UnknownAuthorityError", srvErr)
	}
	if dialErr == nil {
		t.Error("client: connected although the server refused its certificate")
	}
}

// A client that merely holds a foreign certificate in Certificates does not
// offer it (no CA the server lists issued it): it connects as a
// certificate-less client, and the server attributes no node id to it.
func TestClientHandshakeForeignCertificateNotOffered(t *testing.T) {
	ours, theirs := newTestCA(t, "ours"), newTestCA(t, "theirs")
	server := issueTestNode(t, ours, 0xa1, "db.paros.test")
	foreign := issueTestNode(t, theirs, 0xb2)
	cfg := clientConfig(t, ours, "db.paros.test")
	cfg.Certificates = []tls.Certificate{foreign.Cert}

	srvState, srvErr, dialErr := handshake(t, server.ServerConfig(), cfg)

	if dialErr != nil || srvErr != nil {
		t.Fatalf("handshake: client %v, server %v", dialErr, srvErr)
	}
	if len(srvState.PeerCertificates) != 0 {
		t.Errorf("server: got %d client certificates, want none", len(srvState.PeerCertificates))
	}
	if id, err := PeerNodeID(srvState); !errors.Is(err, ErrNoNodeID) {
		t.Errorf("server: PeerNodeID = %016x, %v; want ErrNoNodeID", id, err)
	}
}

func TestClientConfigRefusesBadPEM(t *testing.T) {
	_, err := ClientConfig([]byte("not a certificate"))

	if !errors.Is(err, ErrBadPEM) {
		t.Errorf("ClientConfig: err %v, want ErrBadPEM", err)
	}
}
