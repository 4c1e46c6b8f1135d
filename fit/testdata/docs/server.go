// Package server runs the queue's HTTP API.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("server: closed")

// Job is one unit of work the queue runs.
type Job struct {
	ID      string        `json:"id"`
	Command []string      `json:"command"`
	Timeout time.Duration `json:"timeout"`
}

// Store keeps jobs until a worker takes them.
type Store interface {
	Put(ctx context.Context, j Job) error
	Take(ctx context.Context) (Job, error)
}

// Server serves the API over HTTP.
type Server struct {
	mu     sync.Mutex
	store  Store
	closed bool
}

// New returns a server that keeps its jobs in store.
func New(store Store) *Server {
	return &Server{store: store}
}

// Submit queues a job. It fails once the server is closed.
func (s *Server) Submit(ctx context.Context, j Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.store.Put(ctx, j)
}

// ServeHTTP accepts a job as JSON on POST /jobs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var j Job
	if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.Submit(r.Context(), j); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// Close stops accepting jobs. Jobs already queued still run.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func validate(j Job) error {
	if j.ID == "" {
		return errors.New("job without an id")
	}
	if len(j.Command) == 0 {
		return errors.New("job without a command")
	}
	return nil
}
