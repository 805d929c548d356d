package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where the streamable HTTP transport is served.
const HTTPPath = "/mcp"

// ErrNeedsToken is CheckAddress's error for an address other machines can reach, with no
// bearer token to keep them out.
var ErrNeedsToken = errors.New("an address other machines can reach needs a bearer token")

// CheckAddress refuses to serve a bundle's contents on an address other than loopback
// (127.0.0.0/8, ::1, localhost) unless a bearer token guards it: a host left empty (":8080")
// or naming an interface is reachable from the network.
func CheckAddress(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s: %w", addr, ErrNeedsToken)
}

// HTTPHandler serves the server over the streamable HTTP transport at HTTPPath. With a token,
// every request must carry it ("Authorization: Bearer TOKEN"); requests from another origin
// (a web page's) and, on loopback, with a foreign Host (DNS rebinding) are refused.
func (s *Server) HTTPHandler(token string) http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
	h = http.NewCrossOriginProtection().Handler(h)
	if token != "" {
		h = auth.RequireBearerToken(func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{}, nil
		}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	return mux
}
