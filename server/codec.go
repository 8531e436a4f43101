package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Why a codec: gRPC decodes a request before any interceptor or handler
// runs (the generated unary handlers call dec first), and turns every
// codec error into codes.Internal ("failed to unmarshal"), which tells a
// client the server is broken when it is the client's bytes that are. No
// option changes that code, so the codec does not fail: it marks the
// message as undecodable (an unknown field at undecodableField carrying
// the decoding error, on an otherwise reset message), and the gate's
// interceptors answer InvalidArgument for a marked message before
// anything else sees it. A client that sends that field itself only gets
// its own request refused.

// undecodableField is the field number of the mark: the largest valid one,
// which no paros message uses.
const undecodableField = protowire.MaxValidNumber

// undecodableDetailBytesMax bounds the decoding error carried in the mark.
const undecodableDetailBytesMax = 256

// decodeCheckCodec is gRPC's proto codec, except that a message that does
// not decode is marked instead of failing the call with Internal.
type decodeCheckCodec struct{ base encoding.CodecV2 }

func newDecodeCheckCodec() decodeCheckCodec {
	base := encoding.GetCodecV2(encproto.Name)
	if base == nil {
		panic("paros/server: gRPC's proto codec is not registered")
	}
	return decodeCheckCodec{base: base}
}

func (c decodeCheckCodec) Name() string { return c.base.Name() }

func (c decodeCheckCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c decodeCheckCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	detail := err.Error()
	if len(detail) > undecodableDetailBytesMax {
		detail = detail[:undecodableDetailBytesMax]
	}
	proto.Reset(m)
	mark := protowire.AppendTag(nil, undecodableField, protowire.BytesType)
	mark = protowire.AppendString(mark, detail)
	m.ProtoReflect().SetUnknown(mark)
	return nil
}

// checkDecoded answers InvalidArgument for a message the codec marked as
// undecodable, nil for any other.
func checkDecoded(v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return nil
	}
	u := m.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return nil
		}
		u = u[n:]
		if num == undecodableField && typ == protowire.BytesType {
			detail, n := protowire.ConsumeBytes(u)
			if n < 0 {
				return nil
			}
			return status.Errorf(codes.InvalidArgument, "paros/server: the message does not decode: %s", detail)
		}
		n = protowire.ConsumeFieldValue(num, typ, u)
		if n < 0 {
			return nil
		}
		u = u[n:]
	}
	return nil
}
