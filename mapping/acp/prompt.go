package acp

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// PromptBlocks turns a session/prompt "prompt" (ContentBlock[]) into the
// content blocks of one CLI user message, in order:
//
//   - text → a text block;
//   - image with data → an image block (PNG, JPEG, GIF or WebP, at most
//     5 MB, checked as the ipc dialect does: a bad image would make the
//     API reject the prompt, and the CLI would resend it with every later
//     prompt); image with only an http(s) uri → an image block with a url
//     source;
//   - resource_link → a text block "[name](uri)";
//   - resource with text → a text block <context ref="uri">…</context>;
//     with a blob: an image block for image types, a document block for
//     application/pdf;
//   - audio, other blobs and unknown types are refused (-32602), as the
//     capabilities say.
func PromptBlocks(prompt gjson.Result) ([]mapping.Block, *Error) {
	if !prompt.IsArray() {
		return nil, InvalidParams("prompt must be an array of content blocks")
	}
	var blocks []mapping.Block
	var err *Error
	i := -1
	prompt.ForEach(func(_, b gjson.Result) bool {
		i++
		where := "prompt[" + strconv.Itoa(i) + "]"
		if !b.IsObject() {
			err = InvalidParams(where + " must be an object")
			return false
		}
		var blk mapping.Block
		blk, err = promptBlock(where, b)
		if err != nil {
			return false
		}
		blocks = append(blocks, blk)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, InvalidParams("prompt is empty")
	}
	return blocks, nil
}

func promptBlock(where string, b gjson.Result) (mapping.Block, *Error) {
	typ := b.Get("type").Str
	switch typ {
	case "text":
		t := b.Get("text")
		if t.Type != gjson.String {
			return mapping.Block{}, InvalidParams(where + ": a text block needs a string text")
		}
		return mapping.Block{Kind: mapping.BlockText, Text: t.Str}, nil
	case "image":
		data, mime := b.Get("data").Str, b.Get("mimeType").Str
		if data == "" {
			uri := b.Get("uri").Str
			if strings.HasPrefix(uri, "https://") || strings.HasPrefix(uri, "http://") {
				raw := append([]byte(`{"type":"image","source":{"type":"url","url":`), jsonw.String(nil, uri)...)
				return mapping.Block{Kind: mapping.BlockRaw, Raw: string(append(raw, "}}"...))}, nil
			}
			return mapping.Block{}, InvalidParams(where + ": an image needs base64 data (or an http(s) uri)")
		}
		if why := mapping.CheckImage(mime, data); why != "" {
			return mapping.Block{}, InvalidParams(where + ": image refused: " + why)
		}
		return mapping.Block{Kind: mapping.BlockImage, MediaType: mime, Data: data}, nil
	case "resource_link":
		uri, name := b.Get("uri").Str, b.Get("name").Str
		if uri == "" {
			return mapping.Block{}, InvalidParams(where + ": a resource_link needs a uri")
		}
		if name == "" {
			name = uri
		}
		return mapping.Block{Kind: mapping.BlockText, Text: "[" + name + "](" + uri + ")"}, nil
	case "resource":
		r := b.Get("resource")
		uri := r.Get("uri").Str
		if !r.IsObject() || uri == "" {
			return mapping.Block{}, InvalidParams(where + ": a resource needs resource.uri")
		}
		if t := r.Get("text"); t.Type == gjson.String {
			return mapping.Block{Kind: mapping.BlockText, Text: "<context ref=\"" + uri + "\">\n" + t.Str + "\n</context>"}, nil
		}
		blob, mime := r.Get("blob").Str, r.Get("mimeType").Str
		if blob == "" {
			return mapping.Block{}, InvalidParams(where + ": a resource needs resource.text or resource.blob")
		}
		switch {
		case strings.HasPrefix(mime, "image/"):
			if why := mapping.CheckImage(mime, blob); why != "" {
				return mapping.Block{}, InvalidParams(where + ": image resource refused: " + why)
			}
			return mapping.Block{Kind: mapping.BlockImage, MediaType: mime, Data: blob}, nil
		case mime == "application/pdf":
			raw := append([]byte(`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":`), jsonw.String(nil, blob)...)
			return mapping.Block{Kind: mapping.BlockRaw, Raw: string(append(raw, "}}"...))}, nil
		}
		return mapping.Block{}, InvalidParams(where + ": binary resource of type " + quote(mime) + " is not supported (images and PDF only)")
	case "audio":
		return mapping.Block{}, InvalidParams(where + ": audio is not supported (promptCapabilities.audio is false)")
	}
	return mapping.Block{}, InvalidParams(where + ": unknown content block type " + quote(typ))
}
