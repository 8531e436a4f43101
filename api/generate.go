// Package api holds paros's protobuf contracts (proto/paros/v1) and the Go
// code generated from them (parospb). Regenerate with `go generate ./api/...`:
// buf, protoc-gen-go and protoc-gen-go-grpc run as Go tools, so no system
// protoc is needed.
package api

//go:generate go tool buf generate
