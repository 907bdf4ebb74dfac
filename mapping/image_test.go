package mapping_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
)

func TestCheckImage(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	big := make([]byte, mapping.MaxImageBytes+1)
	copy(big, "\x89PNG\r\n\x1a\n")
	cases := []struct {
		name, mediaType, data, why string
	}{
		{"png", "image/png", b64("\x89PNG\r\n\x1a\n\x00\x00"), ""},
		{"jpeg", "image/jpeg", b64("\xff\xd8\xff\xe0"), ""},
		{"gif87a", "image/gif", b64("GIF87a\x01\x00"), ""},
		{"gif89a", "image/gif", b64("GIF89a\x01\x00"), ""},
		{"webp", "image/webp", b64("RIFF\x24\x00\x00\x00WEBPVP8 "), ""},
		{"line breaks", "image/png", b64("\x89PNG\r\n\x1a\n\x00\x00")[:8] + "\r\n" + b64("\x89PNG\r\n\x1a\n\x00\x00")[8:], ""},
		{"exactly the limit", "image/png", base64.StdEncoding.EncodeToString(big[:mapping.MaxImageBytes]), ""},
		{"bmp", "image/bmp", "Qk0=", `media_type "image/bmp" is not one of image/png, image/jpeg, image/gif, image/webp`},
		{"long media type", "image/" + strings.Repeat("x", 100), "Qk0=", `media_type "image/` + strings.Repeat("x", 71) + `..." is not one of image/png, image/jpeg, image/gif, image/webp`},
		{"empty", "image/png", "", "content is empty"},
		{"one byte over the limit", "image/png", base64.StdEncoding.EncodeToString(big), "image is larger than 5 MB (5242880 bytes) decoded"},
		{"not base64", "image/png", "!!!not base64!!!", "content is not valid base64"},
		{"unpadded", "image/png", strings.TrimRight(b64("\x89PNG\r\n\x1a\n\x00\x00"), "="), "content is not valid base64"},
		{"says png, is jpeg", "image/png", b64("\xff\xd8\xff\xe0"), "content is not a png image"},
		{"webp without WEBP", "image/webp", b64("RIFF\x24\x00\x00\x00WAVE"), "content is not a webp image"},
	}
	for _, c := range cases {
		if got := mapping.CheckImage(c.mediaType, c.data); got != c.why {
			t.Errorf("%s: CheckImage = %q, want %q", c.name, got, c.why)
		}
	}
}
