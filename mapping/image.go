package mapping

import (
	"bytes"
	"encoding/base64"
	"io"
	"strconv"
	"strings"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// MaxImageBytes is the largest image attachment accepted, decoded.
const MaxImageBytes = 5 << 20

// imageTypes are the media types the Messages API accepts.
var imageTypes = [...]string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// CheckImage says why an image attachment is refused, or returns "". The
// media type must be image/png, image/jpeg, image/gif or image/webp; the
// content standard base64 (padding required, line breaks allowed) of at
// most MaxImageBytes bytes; and the bytes must start with that format's
// signature. A mismatched image would make the API reject the prompt, and
// the CLI keeps a rejected prompt in the history it sends next time.
func CheckImage(mediaType, data string) string {
	ok := false
	for _, t := range imageTypes {
		if mediaType == t {
			ok = true
		}
	}
	if !ok {
		return "media_type " + quoteShort(mediaType) + " is not one of image/png, image/jpeg, image/gif, image/webp"
	}
	if data == "" {
		return "content is empty"
	}
	var buf [32 << 10]byte
	dec := base64.NewDecoder(base64.StdEncoding, strings.NewReader(data))
	var head []byte
	total := 0
	for {
		n, err := dec.Read(buf[:])
		if len(head) < 12 {
			head = append(head, buf[:min(n, 12-len(head))]...)
		}
		total += n
		if total > MaxImageBytes {
			return "image is larger than 5 MB (" + strconv.Itoa(MaxImageBytes) + " bytes) decoded"
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "content is not valid base64"
		}
	}
	if !imageMagic(mediaType, head) {
		return "content is not a " + strings.TrimPrefix(mediaType, "image/") + " image"
	}
	return ""
}

func imageMagic(mediaType string, h []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(h, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(h, []byte{0xff, 0xd8, 0xff})
	case "image/gif":
		return bytes.HasPrefix(h, []byte("GIF87a")) || bytes.HasPrefix(h, []byte("GIF89a"))
	case "image/webp":
		return len(h) >= 12 && string(h[:4]) == "RIFF" && string(h[8:12]) == "WEBP"
	}
	return false
}

// quoteShort is s as a JSON string, cut to 80 bytes, for a message.
func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return string(jsonw.String(nil, s))
}
