// Command tinygguf writes the tiny test model to a file, for trying `coroner analyze --llm`
// against a real Ollama server by hand:
//
//	go run ./internal/tinygguf/cmd/tinygguf /tmp/tiny.gguf
//	printf 'FROM /tmp/tiny.gguf\n' > /tmp/Modelfile && ollama create tiny -f /tmp/Modelfile
package main

import (
	"fmt"
	"os"

	"github.com/coroner-dev/coroner/internal/tinygguf"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tinygguf FILE")
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err == nil {
		err = tinygguf.Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tinygguf:", err)
		os.Exit(1)
	}
}
