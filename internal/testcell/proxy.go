package testcell

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a Proxy.
const (
	proxyChunkBytes   = 32 << 10
	proxyDialTimeout  = time.Second
	proxyConnsMax     = 1024
	proxyAnswerLostIn = 50 * time.Millisecond
)

// Proxy forwards TCP connections from its own address on 127.0.0.1 to a
// target address. A test cuts it (every connection closed, new ones
// accepted and closed at once) and heals it, or makes it lose the answer
// to the next request. It knows nothing of gRPC.
type Proxy struct {
	// Addr is the proxy's own address.
	Addr   string
	target string
	lis    net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	armed bool
	pairs map[*pair]struct{}
	// Invariant: len(pairs) <= proxyConnsMax.
	closed bool
}

type pair struct {
	client, server net.Conn
	// dropping: the answer is being lost; server bytes are discarded.
	dropping atomic.Bool
	once     sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
}

// NewProxy listens on 127.0.0.1:0 and forwards to target, which need not
// be up yet (each connection dials it when accepted).
func NewProxy(target string) (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: lis.Addr().String(), target: target, lis: lis, pairs: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Cut closes every connection through the proxy and refuses new ones
// (each is accepted and closed at once) until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	pairs := p.pairs
	p.pairs = map[*pair]struct{}{}
	p.mu.Unlock()
	for pr := range pairs {
		pr.close()
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// LoseNextAnswer makes the proxy forward the next bytes a client sends on
// any connection, keep forwarding that client's bytes for a moment while
// discarding the server's, and then close that connection: the request may
// take effect while its answer is lost.
func (p *Proxy) LoseNextAnswer() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.lis.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		refuse := p.cut || p.closed || len(p.pairs) >= proxyConnsMax
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
	if err != nil {
		_ = c.Close()
		return
	}
	pr := &pair{client: c, server: s}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		pr.close()
		return
	}
	p.pairs[pr] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pairs, pr)
		p.mu.Unlock()
		pr.close()
	}()
	p.wg.Add(1)
	go func() { // server -> client
		defer p.wg.Done()
		defer pr.close()
		buf := make([]byte, proxyChunkBytes)
		for {
			n, err := s.Read(buf)
			if n > 0 && !pr.dropping.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, proxyChunkBytes) // client -> server
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
			p.mu.Lock()
			arm := p.armed
			p.armed = false
			p.mu.Unlock()
			if arm {
				pr.dropping.Store(true)
				time.AfterFunc(proxyAnswerLostIn, pr.close)
			}
		}
		if err != nil {
			return
		}
	}
}
