package caddymodule

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"golang.org/x/term"
)

func init() {
	fs := flag.NewFlagSet("llm-gateway-hash-key", flag.ExitOnError)
	fs.Bool("generate", false, "Create a new random gateway key and print it, then its hash")
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "llm-gateway-hash-key",
		Usage: "[--generate]",
		Short: "Prints the sha256: form of an llm_gateway gateway key",
		Long: `
Prints the form of a gateway key to write in the config, so that the
config (and with it the admin API's GET /config/ and autosave.json) never
holds a usable key:

	llm_gateway {
		api_key sha256:<64 hex digits>
	}

The key is read from standard input (one line; from a terminal it is not
echoed). Surrounding white space is ignored, as it is in the tokens that
clients send. The same hash comes from: printf %s "$KEY" | sha256sum

--generate
    Create a new random gateway key (sk-gw- and 43 URL-safe characters,
    256 bits) instead of reading one: the key is printed on the first
    line and its sha256: form on the second. Give the key to clients and
    put the second line in the config.
`,
		Flags: fs,
		Func:  cmdHashGatewayKey,
	})
}

// cmdHashGatewayKey runs "caddy llm-gateway-hash-key".
func cmdHashGatewayKey(fl caddycmd.Flags) (int, error) {
	in := io.Reader(os.Stdin)
	if !fl.Bool("generate") {
		if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
			fmt.Fprint(os.Stderr, "Gateway key: ")
			b, err := term.ReadPassword(fd)
			fmt.Fprintln(os.Stderr)
			if err != nil {
				return caddy.ExitCodeFailedStartup, err
			}
			in = strings.NewReader(string(b))
		}
	}
	if err := hashKeyCommand(in, os.Stdout, fl.Bool("generate")); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// hashKeyCommand writes the sha256: form of the key read from in (its
// first line) to out; with generate it creates a random key instead and
// writes the key, then its sha256: form, one per line.
func hashKeyCommand(in io.Reader, out io.Writer, generate bool) error {
	if generate {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		key := "sk-gw-" + base64.RawURLEncoding.EncodeToString(b[:])
		_, err := fmt.Fprintf(out, "%s\n%s\n", key, hashGatewayKey(key))
		return err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if strings.TrimSpace(line) == "" {
		return errors.New("no gateway key on standard input")
	}
	_, err = fmt.Fprintln(out, hashGatewayKey(line))
	return err
}
