// Package tinygguf writes a tiny llama-architecture model in GGUF format (2 layers, hidden
// size 64, a SentencePiece vocabulary of a few hundred tokens, F32 weights, under 1 MB) that a
// real Ollama server loads with `ollama create` and runs in milliseconds on one CPU thread.
// It exists to drive the real serving path (create, load, stream, done reasons, context
// limits, errors) in tests, since no real model can be downloaded where coroner is built.
//
// Its weights are deterministic and mostly noise, except that each lowercase letter (and the
// space) predicts the next one in a cycle: the model writes "abc...z abc..." for as long as it
// is let, never an end-of-sequence token and never one token over and over (which Ollama
// aborts after 30 repeats). Tests can so rely on long answers (timeouts, cancellation, cut
// streams) as well as short ones (a small num_predict).
package tinygguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// Shape of the model.
const (
	Hidden   = 64
	Layers   = 2
	Heads    = 4
	FFN      = 128
	CtxTrain = 32768
)

// GGUF value types and tensor types used here.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufBool    = 7
	ggufString  = 8
	ggufArray   = 9
	tensorF32   = 0
	alignment   = 32
)

// SentencePiece token types (llama.cpp's llama_token_type).
const (
	tokNormal  = 1
	tokUnknown = 2
	tokControl = 3
	tokByte    = 6
)

type kv struct {
	key string
	typ uint32
	val any
}

type tensor struct {
	name string
	dims []uint64 // innermost first, as GGUF stores them
	data []float32
}

// Vocabulary returns the tokens: <unk>, <s>, </s>, the 256 byte-fallback tokens, and one
// piece per printable ASCII character (space spelled "▁", as SentencePiece does).
func Vocabulary() (tokens []string, types []int32, scores []float32) {
	add := func(s string, t int32, score float32) {
		tokens, types, scores = append(tokens, s), append(types, t), append(scores, score)
	}
	add("<unk>", tokUnknown, 0)
	add("<s>", tokControl, 0)
	add("</s>", tokControl, 0)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), tokByte, 0)
	}
	for c := 0x20; c < 0x7f; c++ {
		s := string(rune(c))
		if c == ' ' {
			s = "▁"
		}
		add(s, tokNormal, -float32(c))
	}
	return tokens, types, scores
}

// Vocab is the model's tokenizer: SentencePiece (Model "llama", the default of Write) or a
// byte-level BPE (Model "gpt2", with the merges and the pre-tokenizer of a real model's
// tokenizer.json), so that a test can have Ollama count tokens as that model does.
type Vocab struct {
	Model string
	// Pre names the BPE pre-tokenizer as GGUF does ("qwen2", "llama-bpe"); "" for
	// SentencePiece.
	Pre    string
	Tokens []string
	Types  []int32
	// Scores are SentencePiece's; Merges ("a b") the BPE's.
	Scores   []float32
	Merges   []string
	BOS, EOS uint32
	AddBOS   bool
	// Quote puts the double quote in the cycle, after the space ("... z \" a ..."): an answer
	// held to a JSON schema then closes each string it opens, and parses.
	Quote bool
}

// Token types of a BPE vocabulary.
const (
	TokenNormal      = tokNormal
	TokenControl     = tokControl
	TokenUserDefined = 4
)

// Write writes the model. The same call writes the same bytes.
func Write(w io.Writer) error {
	tokens, types, scores := Vocabulary()
	return WriteVocab(w, &Vocab{Model: "llama", Tokens: tokens, Types: types, Scores: scores, BOS: 1, EOS: 2, AddBOS: true})
}

// WriteQuoting writes the model of Write with the double quote in its cycle (Vocab.Quote):
// held to the answer's JSON schema, it writes an answer that parses.
func WriteQuoting(w io.Writer) error {
	tokens, types, scores := Vocabulary()
	return WriteVocab(w, &Vocab{Model: "llama", Tokens: tokens, Types: types, Scores: scores, BOS: 1, EOS: 2, AddBOS: true, Quote: true})
}

// WriteVocab writes the model with another tokenizer. Its weights are noise but for the cycle
// of the lowercase letters (when the vocabulary has them as tokens): the answers mean nothing,
// but a real vocabulary makes the server's token counts those of the model it comes from.
func WriteVocab(w io.Writer, v *Vocab) error {
	tokens := v.Tokens
	vocab := uint64(len(tokens))
	meta := []kv{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, "coroner-tiny"},
		{"general.alignment", ggufUint32, uint32(alignment)},
		{"llama.context_length", ggufUint32, uint32(CtxTrain)},
		{"llama.embedding_length", ggufUint32, uint32(Hidden)},
		{"llama.block_count", ggufUint32, uint32(Layers)},
		{"llama.feed_forward_length", ggufUint32, uint32(FFN)},
		{"llama.attention.head_count", ggufUint32, uint32(Heads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(Heads)},
		{"llama.rope.dimension_count", ggufUint32, uint32(Hidden / Heads)},
		{"llama.rope.freq_base", ggufFloat32, float32(10000)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.vocab_size", ggufUint32, uint32(vocab)},
		{"tokenizer.ggml.model", ggufString, v.Model},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
	}
	if v.Pre != "" {
		meta = append(meta, kv{"tokenizer.ggml.pre", ggufString, v.Pre})
	}
	if v.Scores != nil {
		meta = append(meta, kv{"tokenizer.ggml.scores", ggufArray, v.Scores})
	}
	if v.Merges != nil {
		meta = append(meta, kv{"tokenizer.ggml.merges", ggufArray, v.Merges})
	}
	meta = append(meta,
		kv{"tokenizer.ggml.token_type", ggufArray, v.Types},
		kv{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		kv{"tokenizer.ggml.bos_token_id", ggufUint32, v.BOS},
		kv{"tokenizer.ggml.eos_token_id", ggufUint32, v.EOS},
		kv{"tokenizer.ggml.add_bos_token", ggufBool, v.AddBOS},
		kv{"tokenizer.ggml.add_eos_token", ggufBool, false},
	)

	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * 0.02)
		}
		return out
	}
	ones := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	h, f := uint64(Hidden), uint64(FFN)
	embd, output := cycleWeights(rng, tokens, v.Quote)
	ts := []tensor{{"token_embd.weight", []uint64{h, vocab}, embd}}
	for l := 0; l < Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{h}, ones(h)},
			tensor{p + "attn_q.weight", []uint64{h, h}, noise(h * h)},
			tensor{p + "attn_k.weight", []uint64{h, h}, noise(h * h)},
			tensor{p + "attn_v.weight", []uint64{h, h}, noise(h * h)},
			tensor{p + "attn_output.weight", []uint64{h, h}, noise(h * h)},
			tensor{p + "ffn_norm.weight", []uint64{h}, ones(h)},
			tensor{p + "ffn_gate.weight", []uint64{h, f}, noise(h * f)},
			tensor{p + "ffn_up.weight", []uint64{h, f}, noise(h * f)},
			tensor{p + "ffn_down.weight", []uint64{f, h}, noise(f * h)},
		)
	}
	ts = append(ts,
		tensor{"output_norm.weight", []uint64{h}, ones(h)},
		tensor{"output.weight", []uint64{h, vocab}, output},
	)

	bw := bufio.NewWriter(w)
	e := &enc{w: bw}
	e.raw([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(ts)))
	e.u64(uint64(len(meta)))
	for _, m := range meta {
		e.str(m.key)
		e.value(m.typ, m.val)
	}
	var offset uint64
	for _, t := range ts {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(tensorF32)
		e.u64(offset)
		offset += pad(uint64(len(t.data)) * 4)
	}
	e.padTo()
	for _, t := range ts {
		for _, v := range t.data {
			e.u32(math.Float32bits(v))
		}
		e.padTo()
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// cycleWeights makes the embeddings (a random direction of norm 8 per token; the residual
// stream carries it through the small layers) and the output projection: the row of a cycle
// token is the direction of the token before it in the cycle, so the current token's
// direction scores its successor highest; other rows are zero, below every cycle token's
// score in practice, the end-of-sequence token's included.
func cycleWeights(rng *rand.Rand, tokens []string, quote bool) (embd, output []float32) {
	dirs := make([][]float32, len(tokens))
	for i := range tokens {
		v := make([]float32, Hidden)
		var norm float64
		for k := range v {
			x := rng.NormFloat64()
			v[k] = float32(x)
			norm += x * x
		}
		for k := range v {
			v[k] /= float32(math.Sqrt(norm))
		}
		dirs[i] = v
	}
	var cycle []int
	for i, t := range tokens {
		if len(t) == 1 && t[0] >= 'a' && t[0] <= 'z' || t == "▁" || quote && t == `"` {
			cycle = append(cycle, i)
		}
	}
	embd = make([]float32, 0, len(tokens)*Hidden)
	for _, d := range dirs {
		for _, x := range d {
			embd = append(embd, 8*x)
		}
	}
	output = make([]float32, len(tokens)*Hidden)
	for k, id := range cycle {
		prev := cycle[(k+len(cycle)-1)%len(cycle)]
		for j, x := range dirs[prev] {
			output[id*Hidden+j] = 4 * x
		}
	}
	return embd, output
}

func pad(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// enc writes little-endian GGUF values, remembering the first error and the offset.
type enc struct {
	w   io.Writer
	n   uint64
	err error
}

func (e *enc) raw(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += uint64(n)
}

func (e *enc) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *enc) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *enc) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }
func (e *enc) padTo()       { e.raw(make([]byte, pad(e.n)-e.n)) }

func (e *enc) value(typ uint32, v any) {
	e.u32(typ)
	switch x := v.(type) {
	case string:
		e.str(x)
	case uint32:
		e.u32(x)
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case []string:
		e.u32(ggufString)
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []float32:
		e.u32(ggufFloat32)
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.u32(ggufInt32)
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	default:
		e.err = fmt.Errorf("tinygguf: no encoding for %T", v)
	}
}
