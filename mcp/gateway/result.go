package gateway

import (
	"context"
	"encoding/json"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/fit"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// fitResult fits and offloads the text of a tools/call result. Everything
// but the text of text items is kept as the server sent it (other content
// types, structuredContent, isError, _meta); when anything was cut or kept
// as a file, `_meta["airlock/fit"]` says so. A result over
// offload.MaxResult as JSON becomes a failed call asking for less.
func (s *session) fitResult(ctx context.Context, ci *callInfo, result json.RawMessage) json.RawMessage {
	if ci == nil {
		return result
	}
	if len(result) > offload.MaxResult {
		return errorResult(offload.TooLarge(ci.name, len(result)))
	}
	var res map[string]json.RawMessage
	var content []map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil || json.Unmarshal(res["content"], &content) != nil {
		return result
	}
	var meta mcp.FitMeta
	meta.BudgetFilled = ci.filled
	changed := false
	for _, item := range content {
		var typ, text string
		if json.Unmarshal(item["type"], &typ) != nil || typ != "text" || json.Unmarshal(item["text"], &text) != nil {
			continue
		}
		orig := text
		if ci.fitConv && ci.budget > 0 && fit.Weigh(text) > ci.budget {
			// The tool was asked for a budget and answered with more: cut it
			// as the convention says it should have.
			r := fit.Fit(text, fit.Request{View: fit.View(ci.view), Budget: ci.budget, Query: ci.query})
			text = r.Text
			note := r.Note
			meta.Note = &note
		}
		if o := s.g.o.Offloader; o != nil {
			out, err := o.Offload(ctx, s.g.o.Scope, s.g.o.Prefix+ci.name, text)
			if err != nil {
				return errorResult(err)
			}
			if out.Stub != nil {
				text = out.Text
				meta.Offloaded = out.Stub.Offloaded
			}
		}
		if text != orig {
			item["text"], _ = json.Marshal(text)
			meta.Items++
			changed = true
		}
	}
	if !changed && ci.filled == 0 {
		return result
	}
	res["content"], _ = json.Marshal(content)
	var m map[string]json.RawMessage
	if len(res["_meta"]) > 0 && json.Unmarshal(res["_meta"], &m) != nil {
		m = nil
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[mcp.MetaFit], _ = json.Marshal(meta)
	res["_meta"], _ = json.Marshal(m)
	out, err := json.Marshal(res)
	if err != nil {
		return result
	}
	return out
}

// errorResult is a failed call the model reads: the call was made and its
// result is not used.
func errorResult(err error) json.RawMessage {
	msg := err.Error()
	if errs.ClassOf(err) == errs.Internal {
		msg = "airlock: the result could not be handled"
	}
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": msg}}, "isError": true})
	return b
}

// readResult answers the built-in read_result locally, decided like any
// tool call.
func (s *session) readResult(ctx context.Context, id jsonrpc.ID, args map[string]any) {
	if s.take(id) == nil {
		return // answered already
	}
	if _, ok := args["budget"]; !ok {
		args, _ = mcp.FillBudget(args, s.g.o.Budget())
	}
	if _, err := s.g.o.Decide(ctx, mediator.Call{Kind: mediator.KindTool, Tool: offload.ToolName, Args: args}); err != nil {
		s.reply(ctx, id, err)
		return
	}
	for k, v := range args {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				args[k] = float64(i)
			}
		}
	}
	a, err := offload.ArgsFrom(args)
	if err != nil {
		s.reply(ctx, id, err)
		return
	}
	r, err := s.g.o.Offloader.ReadResult(ctx, s.g.o.Scope, a)
	var result json.RawMessage
	if err != nil {
		if errs.ClassOf(err) == errs.Internal {
			s.reply(ctx, id, err)
			return
		}
		result = errorResult(err)
	} else {
		note := r.Note
		result, _ = json.Marshal(map[string]any{
			"content":           []map[string]string{{"type": "text", "text": r.Text}},
			"structuredContent": map[string]any{"content": r.Text, "fit": note},
			"_meta":             map[string]any{mcp.MetaFit: mcp.FitMeta{Note: &note}},
		})
	}
	s.toClient(ctx, &jsonrpc.Response{ID: id, Result: result})
}
