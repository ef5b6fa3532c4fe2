package validatortest

import (
	"net/netip"
	"strings"

	"github.com/mediajobs/mediajobs/validator"
)

// An AddressCase is one command of the address table: an input URL on a non-public host, in one
// of the spellings URL parsers and resolvers read as an address, or a value of -hls_base_url,
// which must be refused by Layer with a message containing Names; or, with Layer "", a public
// host or a relative name that must be accepted.
type AddressCase struct {
	Name    string
	Command string
	Options validator.Options
	Layer   string
	Names   string
}

// nonPublicURLs are input URLs on non-public hosts, each with what the refusal must name: the
// address it decodes to (as net/netip writes it, or a part of that), or the host.
var nonPublicURLs = []struct{ url, names string }{
	// Loopback in the spellings of inet_aton (behind getaddrinfo) and the WHATWG URL parser.
	{"https://127.0.0.1/a.mp4", "127.0.0.1"},
	{"https://127.0.0.1:443/a.mp4", "127.0.0.1"},
	{"https://127.1/a.mp4", "127.0.0.1"},
	{"https://127.0.1/a.mp4", "127.0.0.1"},
	{"https://127.255.255.254/a.mp4", "127.255.255.254"},
	{"https://0x7f.1/a.mp4", "127.0.0.1"},
	{"https://0X7F.0.0.1/a.mp4", "127.0.0.1"},
	{"https://0x7f000001/a.mp4", "127.0.0.1"},
	{"https://0x7f.0x0.0x0.0x1/a.mp4", "127.0.0.1"},
	{"https://2130706433/a.mp4", "127.0.0.1"},
	{"https://017700000001/a.mp4", "127.0.0.1"},
	{"https://0177.0.0.1/a.mp4", "127.0.0.1"},
	{"https://0000177.0.0.01/a.mp4", "127.0.0.1"},
	{"https://0177.1/a.mp4", "127.0.0.1"},
	{"https://127.0.0.1./a.mp4", "127.0.0.1"},
	{"https://127.1.:8443/a.mp4", "127.0.0.1"},
	{"HTTPS://127.0.0.1/a.mp4", "127.0.0.1"},
	{"https:///127.0.0.1/a.mp4", "127.0.0.1"},
	{"https://%31%32%37.0.0.1/a.mp4", "127.0.0.1"},
	{"https://%2531%2532%2537.0.0.1/a.mp4", "127.0.0.1"},
	{"https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/a.mp4", "127.0.0.1"},
	{"https://127\u30020\u30020\u30021/a.mp4", "127.0.0.1"},
	{"https://127.0.0.1\u00ad/a.mp4", "127.0.0.1"},
	{"https://\u2460\u2461\u2466.0.0.1/a.mp4", "\u2460\u2461\u2466.0.0.1"},
	// Userinfo and backslash tricks: FFmpeg and Go take the host after the last '@', WHATWG
	// ends the authority at '\'.
	{"https://cdn.example.com@127.0.0.1/a.mp4", "127.0.0.1"},
	{"https://cdn.example.com:443@127.0.0.1/a.mp4", "127.0.0.1"},
	{"https://a@b@0x7f.1/a.mp4", "127.0.0.1"},
	{"https://127.0.0.1\\@cdn.example.com/a.mp4", "127.0.0.1"},
	{"https://cdn.example.com\\@127.0.0.1/a.mp4", "127.0.0.1"},
	{"https://127.0.0.1#@cdn.example.com/a.mp4", "127.0.0.1"},
	{"https://user:pw@[::1]/a.mp4", "::1"},
	// IPv6 and the forms that embed IPv4.
	{"https://[::1]/a.mp4", "::1"},
	{"https://[::1]:8443/a.mp4", "::1"},
	{"https://[0:0:0:0:0:0:0:1]/a.mp4", "::1"},
	{"https://[::]/a.mp4", "::"},
	{"https://[::ffff:127.0.0.1]/a.mp4", "127.0.0.1"},
	{"https://[::ffff:7f00:1]/a.mp4", "127.0.0.1"},
	{"https://[::127.0.0.1]/a.mp4", "::7f00:1"},
	{"https://[64:ff9b::127.0.0.1]/a.mp4", "127.0.0.1"},
	{"https://[2002:7f00:1::]/a.mp4", "127.0.0.1"},
	{"https://[127.0.0.1]/a.mp4", "127.0.0.1"},
	{"https://[fe80::1%25eth0]/a.mp4", "fe80::1"},
	{"https://[::0%2570]/a.mp4", "::%2570"},
	{"https://[fd12:3456::1]/a.mp4", "fd12:3456::1"},
	{"https://[fc00::1]/a.mp4", "fc00::1"},
	{"https://[ff02::1]/a.mp4", "ff02::1"},
	{"https://[2001:db8::1]/a.mp4", "2001:db8::1"},
	// localhost names.
	{"https://localhost/a.mp4", "localhost"},
	{"https://LOCALHOST./a.mp4", "LOCALHOST."},
	{"https://localhost:8443/a.mp4", "localhost"},
	{"https://media.localhost/a.mp4", "media.localhost"},
	{"https://%6c%6f%63%61%6c%68%6f%73%74/a.mp4", "%6c%6f%63%61%6c%68%6f%73%74"},
	{"https://loc\u00adalhost/a.mp4", "localhost"},
	{"https://ip6-localhost/a.mp4", "ip6-localhost"},
	// Private, carrier-grade NAT, unspecified, broadcast, multicast, documentation, benchmarking.
	{"https://10.0.0.1/a.mp4", "10.0.0.1"},
	{"https://10.1/a.mp4", "10.0.0.1"},
	{"https://0xa.1/a.mp4", "10.0.0.1"},
	{"https://167772161/a.mp4", "10.0.0.1"},
	{"https://172.16.0.1/a.mp4", "172.16.0.1"},
	{"https://172.31.255.255/a.mp4", "172.31.255.255"},
	{"https://192.168.1.1/a.mp4", "192.168.1.1"},
	{"https://3232235777/a.mp4", "192.168.1.1"},
	{"https://0xc0a80101/a.mp4", "192.168.1.1"},
	{"https://100.64.0.1/a.mp4", "100.64.0.1"},
	{"https://0.0.0.0/a.mp4", "0.0.0.0"},
	{"https://0/a.mp4", "0.0.0.0"},
	{"https://0x0/a.mp4", "0.0.0.0"},
	{"https://255.255.255.255/a.mp4", "255.255.255.255"},
	{"https://4294967295/a.mp4", "255.255.255.255"},
	{"https://224.0.0.1/a.mp4", "224.0.0.1"},
	{"https://192.0.2.1/a.mp4", "192.0.2.1"},
	{"https://198.51.100.7/a.mp4", "198.51.100.7"},
	{"https://203.0.113.9/a.mp4", "203.0.113.9"},
	{"https://198.18.0.1/a.mp4", "198.18.0.1"},
	// Cloud metadata: AWS, GCP, Azure and OCI at 169.254.169.254, AWS over IPv6, Alibaba,
	// Azure's WireServer.
	{"https://169.254.169.254/latest/meta-data/a.mp4", "169.254.169.254"},
	{"https://0xa9fea9fe/a.mp4", "169.254.169.254"},
	{"https://2852039166/a.mp4", "169.254.169.254"},
	{"https://0251.0376.0251.0376/a.mp4", "169.254.169.254"},
	{"https://169.254.43518/a.mp4", "169.254.169.254"},
	{"https://[::ffff:169.254.169.254]/a.mp4", "169.254.169.254"},
	{"https://[::ffff:a9fe:a9fe]/a.mp4", "169.254.169.254"},
	{"https://[fd00:ec2::254]/latest/meta-data/a.mp4", "fd00:ec2::254"},
	{"https://100.100.100.200/latest/meta-data/a.mp4", "100.100.100.200"},
	{"https://168.63.129.16/machine/a.mp4", "168.63.129.16"},
	// Hosts that end in a number but are no IPv4 address: parsers disagree on them.
	{"https://1.2.3.4.5/a.mp4", "1.2.3.4.5"},
	{"https://4294967296/a.mp4", "4294967296"},
	{"https://4294967297/a.mp4", "4294967297"},
	{"https://256.0.0.1/a.mp4", "256.0.0.1"},
	{"https://cdn.example.123/a.mp4", "cdn.example.123"},
	// Other schemes are no inputs at all; the refusal still names the address.
	{"http://127.0.0.1/a.mp4", "127.0.0.1"},
	{"http://[::1]:8080/a.mp4", "::1"},
	{"http://0x7f.1/a.mp4", "127.0.0.1"},
	{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
	{"https:\\\\127.0.0.1\\a.mp4", "127.0.0.1"},
}

// publicURLs are input URLs on public hosts, or names only DNS can judge, that must pass.
var publicURLs = []string{
	"https://cdn.example.com/in.mp4",
	"https://CDN.Example.COM./in.mp4",
	"https://cdn.example.com:8443/in.mp4?sig=1.2.3.4&v=127.0.0.1",
	"https://cdn.example.com/127.0.0.1/in.mp4",
	"https://8.8.8.8/in.mp4",
	"https://1.1.1.1:8443/in.mp4",
	"https://172.32.0.1/in.mp4",
	"https://100.128.0.1/in.mp4",
	"https://[2606:4700:4700::1111]/in.mp4",
	"https://[2001:4860:4860::8888]:443/in.mp4",
	"https://b\u00fccher.example/in.mp4",
	"https://localhost.example.com/in.mp4",
	"https://127.0.0.1.example.com/in.mp4",
	"https://h/in.mp4",
}

// hlsBaseURLs are values of -hls_base_url, each with whether it is refused.
var hlsBaseURLs = []struct {
	value   string
	refused bool
}{
	{"segments/", false},
	{"v1/seg-", false},
	{"media_1.2/", false},
	{"file:///etc/", true},
	{"file:/etc/", true},
	{"http://cdn.example.com/hls/", true},
	{"https://127.0.0.1/", true},
	{"data:text/plain,x", true},
	{"//evil.example/", true},
	{"/abs/", true},
	{"../up/", true},
	{"a/../../b/", true},
	{"a//b/", true},
	{"a\\b/", true},
	{"%2e%2e/", true},
	{"seg ments/", true},
}

// Addresses is the address table: every non-public URL as an -i value and as a staged input's
// url, every public URL alike, staged URLs under an allow list that opens loopback, and values
// of -hls_base_url. The native, WASM and endpoint checks all run it.
func Addresses() []AddressCase {
	var cases []AddressCase
	for _, u := range nonPublicURLs {
		cases = append(cases,
			AddressCase{Name: "-i " + u.url, Command: "ffmpeg -i " + shellQuote(u.url) + " out.mp4", Layer: "inputs", Names: u.names},
			AddressCase{Name: "staged " + u.url, Command: "ffmpeg -i in.mp4 out.mp4",
				Options: validator.Options{Inputs: map[string]validator.Input{"in.mp4": {URL: u.url}}}, Layer: "inputs", Names: u.names})
	}
	for _, u := range publicURLs {
		cases = append(cases,
			AddressCase{Name: "-i " + u, Command: "ffmpeg -i " + shellQuote(u) + " out.mp4"},
			AddressCase{Name: "staged " + u, Command: "ffmpeg -i in.mp4 out.mp4",
				Options: validator.Options{Inputs: map[string]validator.Input{"in.mp4": {URL: u}}}})
	}
	// MEDIAJOBS_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8 opens loopback in every spelling, and localhost
	// names; nothing else.
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, a := range []struct {
		url, names string
	}{
		{"https://127.0.0.1:8443/clip.mp4", ""},
		{"https://0x7f.1/clip.mp4", ""},
		{"https://[::ffff:127.0.0.1]/clip.mp4", ""},
		{"https://[64:ff9b::127.0.0.1]/clip.mp4", ""},
		{"https://localhost/clip.mp4", ""},
		{"https://[::1]/clip.mp4", "::1"},
		{"https://10.0.0.1/clip.mp4", "10.0.0.1"},
		{"https://169.254.169.254/clip.mp4", "169.254.169.254"},
	} {
		c := AddressCase{Name: "allowed 127.0.0.0/8 " + a.url, Command: "ffmpeg -i in.mp4 out.mp4",
			Options: validator.Options{Inputs: map[string]validator.Input{"in.mp4": {URL: a.url}}, AllowPrivateNetworks: loopback}}
		if a.names != "" {
			c.Layer, c.Names = "inputs", a.names
		}
		cases = append(cases, c)
	}
	for _, v := range hlsBaseURLs {
		c := AddressCase{Name: "-hls_base_url " + v.value,
			Command: "ffmpeg -i https://cdn.example.com/in.mp4 -c copy -f hls -hls_base_url " + shellQuote(v.value) + " out.m3u8"}
		if v.refused {
			c.Layer, c.Names = "paths", "-hls_base_url"
		}
		cases = append(cases, c)
	}
	return cases
}

// shellQuote writes a word so that the validator's splitter reads it back unchanged.
func shellQuote(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
