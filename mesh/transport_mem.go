package mesh

import (
	"context"
	"errors"
	"sync"
)

// ErrUnreachable is what MemTransport returns for an endpoint that is down
// or unknown.
var ErrUnreachable = errors.New("paros/mesh: endpoint unreachable")

// MemTransport is an in-process Transport: it hands each message to the
// registered runtime's AcceptHello or AcceptSync. Tests stop and wake
// runtimes by taking their endpoint down and up.
type MemTransport struct {
	mu    sync.Mutex
	peers map[string]*Runtime
	down  map[string]bool
}

// NewMemTransport returns an empty in-process network.
func NewMemTransport() *MemTransport {
	return &MemTransport{peers: map[string]*Runtime{}, down: map[string]bool{}}
}

// Register serves r at endpoint.
func (m *MemTransport) Register(endpoint string, r *Runtime) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peers[normalizeEndpoint(endpoint)] = r
}

// SetDown makes endpoint unreachable (true) or reachable again (false).
func (m *MemTransport) SetDown(endpoint string, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[normalizeEndpoint(endpoint)] = down
}

func (m *MemTransport) target(endpoint string) (*Runtime, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.peers[endpoint]
	if r == nil || m.down[endpoint] {
		return nil, ErrUnreachable
	}
	return r, nil
}

// Hello delivers a hello.
func (m *MemTransport) Hello(_ context.Context, endpoint string, msg []byte) ([]byte, error) {
	r, err := m.target(endpoint)
	if err != nil {
		return nil, err
	}
	return r.AcceptHello(msg)
}

// Sync delivers a sync request.
func (m *MemTransport) Sync(_ context.Context, endpoint string, msg []byte) ([]byte, error) {
	r, err := m.target(endpoint)
	if err != nil {
		return nil, err
	}
	return r.AcceptSync(msg)
}
