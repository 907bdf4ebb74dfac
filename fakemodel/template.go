package fakemodel

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// templateRE finds {{name}} and {{name|default}}. Anything else, including a
// lone "{{", is literal text.
var templateRE = regexp.MustCompile(`\{\{([a-z_]+)(?:\|([^{}]*))?\}\}`)

// templateVars lists the variables a template may use, with their meaning
// (kept here so the docs and the validator agree).
var templateVars = map[string]string{
	"cwd":         "the CLI's working directory, from the request's environment section (\".\" if absent)",
	"arg":         "the word after the keyword or contains match, or the regex's first group",
	"prompt":      "the latest user prompt's text",
	"images":      "the number of image blocks in the request",
	"step":        "the step index",
	"model":       "the requested model id",
	"tool_result": "the text of the tool results in the latest user message",
	"steer":       "the messages the user sent while the turn ran, as the CLI surfaced them after the prompt, joined by \" | \"",
}

func checkTemplate(where, s string) error {
	for _, m := range templateRE.FindAllStringSubmatch(s, -1) {
		if _, ok := templateVars[m[1]]; !ok {
			return fmt.Errorf("%s: unknown template variable {{%s}} (known: cwd, arg, prompt, images, step, model, tool_result, steer)", where, m[1])
		}
	}
	return nil
}

// vars holds the template values for one request.
type vars struct {
	cwd, arg, prompt, model, toolResult, steer string
	images, step                               int
}

func (v *vars) get(name string) string {
	switch name {
	case "cwd":
		return v.cwd
	case "arg":
		return v.arg
	case "prompt":
		return v.prompt
	case "images":
		return strconv.Itoa(v.images)
	case "step":
		return strconv.Itoa(v.step)
	case "model":
		return v.model
	case "tool_result":
		return v.toolResult
	case "steer":
		return v.steer
	}
	return ""
}

// value is a variable's value, or def when it is empty; an unknown cwd with
// no default is ".".
func (v *vars) value(name, def string) string {
	val := v.get(name)
	if val == "" {
		val = def
		if val == "" && name == "cwd" {
			val = "."
		}
	}
	return val
}

// expand substitutes the variables in s.
func (v *vars) expand(s string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return templateRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := templateRE.FindStringSubmatch(m)
		return v.value(sub[1], sub[2])
	})
}

// expandJSON substitutes inside raw JSON text: values are JSON-escaped so the
// result stays valid (templates only ever sit inside JSON strings, since
// "{{" is not valid JSON outside one). Defaults are inserted as written,
// since they are already escaped in the raw text.
func (v *vars) expandJSON(raw []byte) []byte {
	if !bytes.Contains(raw, []byte("{{")) {
		return raw
	}
	return []byte(templateRE.ReplaceAllStringFunc(string(raw), func(m string) string {
		sub := templateRE.FindStringSubmatch(m)
		if v.get(sub[1]) == "" && sub[2] != "" {
			return sub[2]
		}
		b := jsonString(v.value(sub[1], ""))
		return string(b[1 : len(b)-1])
	}))
}
