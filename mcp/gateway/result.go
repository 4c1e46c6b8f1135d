package gateway

import (
	"context"
	"encoding/json"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// fitResult has the kernel fit and offload the text of a tools/call
// result. Everything but the text of text items is kept as the server sent
// it (other content types, structuredContent, isError, _meta); when
// anything was cut or kept as a file, `_meta["airlock/fit"]` says so. A
// result over mediator.MaxResult as JSON becomes a failed call asking for
// less.
func (s *session) fitResult(ctx context.Context, ci *callInfo, result json.RawMessage) json.RawMessage {
	if ci == nil {
		return result
	}
	if len(result) > mediator.MaxResult {
		return errorResult(mediator.TooLarge(ci.name, len(result)))
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return result
	}
	// The fit note is airlock's alone: one the server wrote would have a
	// client (a node) take its ref for one the kernel offloaded.
	stripped := stripFitNote(res)
	var content []map[string]json.RawMessage
	if json.Unmarshal(res["content"], &content) != nil {
		return remarshal(res, result, stripped)
	}
	var meta mcp.FitMeta
	meta.BudgetFilled = ci.filled
	changed := false
	for _, item := range content {
		var typ, text string
		if json.Unmarshal(item["type"], &typ) != nil || typ != "text" || json.Unmarshal(item["text"], &text) != nil {
			continue
		}
		req := mediator.FitRequest{Tool: s.g.o.Prefix + ci.name, Text: text}
		if ci.fitConv {
			// The tool was handed the view and query itself: cut only
			// what it answered over the budget it was asked for.
			req.View, req.Budget, req.Query, req.OverBudget = ci.view, ci.budget, ci.query, true
		}
		r, err := s.g.o.Kernel.Fit(ctx, req)
		if err != nil {
			return errorResult(err)
		}
		if r.Note != nil {
			meta.Note = r.Note
		}
		if r.Offloaded != nil {
			meta.Offloaded = r.Offloaded
		}
		if r.Text != text {
			item["text"], _ = json.Marshal(r.Text)
			meta.Items++
			changed = true
		}
	}
	if !changed && ci.filled == 0 {
		return remarshal(res, result, stripped)
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
	msg := errs.AgentMessage(err) // never the causes it wraps
	if errs.ClassOf(err) == errs.Internal {
		msg = "airlock: the result could not be handled"
	}
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": msg}}, "isError": true})
	return b
}

// readResult answers the built-in read_result locally, through the kernel.
func (s *session) readResult(ctx context.Context, id jsonrpc.ID, args map[string]any) {
	if s.take(id) == nil {
		return // answered already
	}
	if _, ok := args["budget"]; !ok {
		args, _ = mcp.FillBudget(args, s.g.o.Budget())
	}
	r, err := s.g.o.Kernel.ReadResult(ctx, mediator.Call{Kind: mediator.KindReadResult, Args: args})
	var result json.RawMessage
	if err != nil {
		if errs.Is(err, errs.Denied) || errs.ClassOf(err) == errs.Internal {
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

// stripFitNote removes a fit note from a result's _meta, reporting
// whether there was one. A _meta that is not an object is left to the
// client, holding no note airlock reads.
func stripFitNote(res map[string]json.RawMessage) bool {
	var m map[string]json.RawMessage
	if len(res["_meta"]) == 0 || json.Unmarshal(res["_meta"], &m) != nil {
		return false
	}
	if _, ok := m[mcp.MetaFit]; !ok {
		return false
	}
	delete(m, mcp.MetaFit)
	res["_meta"], _ = json.Marshal(m)
	return true
}

// remarshal is res encoded again when it was changed, else the result as
// the server sent it.
func remarshal(res map[string]json.RawMessage, result json.RawMessage, changed bool) json.RawMessage {
	if !changed {
		return result
	}
	out, err := json.Marshal(res)
	if err != nil {
		return errorResult(errs.New(errs.Internal, "tools/call: the result could not be encoded again"))
	}
	return out
}
