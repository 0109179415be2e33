// What Go's encoding/json makes of state files with duplicate keys, as Pulumi decodes them
// (VersionedCheckpoint, then its checkpoint as a CheckpointV3), re-encoded. Not part of the
// build: run by hand to regenerate fixtures/dupkey (see fixtures/dupkey/README).
//
//	go run . IN.json...   writes IN.go.json beside each IN.json
//
// The types mirror sdk/go/common/apitype/core.go (the fields the fixtures use, with their
// JSON names, omitempty and pointers); config.Map's own decoder replaces the whole map.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

type ConfigMap map[string]interface{}

func (m *ConfigMap) UnmarshalJSON(b []byte) error {
	raw := make(map[string]interface{})
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = raw
	return nil
}

type VersionedCheckpoint struct {
	Version    int             `json:"version"`
	Features   []string        `json:"features,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

type CheckpointV3 struct {
	Stack  string        `json:"stack"`
	Config ConfigMap     `json:"config,omitempty"`
	Latest *DeploymentV3 `json:"latest,omitempty"`
}

type PluginInfoV1 struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

type ManifestV1 struct {
	Time    time.Time      `json:"time"`
	Magic   string         `json:"magic"`
	Version string         `json:"version"`
	Plugins []PluginInfoV1 `json:"plugins,omitempty"`
}

type SecretsProvidersV1 struct {
	Type  string          `json:"type"`
	State json.RawMessage `json:"state,omitempty"`
}

type CustomTimeouts struct {
	Create float64 `json:"create,omitempty"`
	Update float64 `json:"update,omitempty"`
	Delete float64 `json:"delete,omitempty"`
}

type ResourceV3 struct {
	URN                  string                 `json:"urn"`
	Custom               bool                   `json:"custom"`
	Delete               bool                   `json:"delete,omitempty"`
	ID                   string                 `json:"id,omitempty"`
	Type                 string                 `json:"type"`
	Inputs               map[string]interface{} `json:"inputs,omitempty"`
	Outputs              map[string]interface{} `json:"outputs,omitempty"`
	Parent               string                 `json:"parent,omitempty"`
	Protect              bool                   `json:"protect,omitempty"`
	Dependencies         []string               `json:"dependencies,omitempty"`
	Provider             string                 `json:"provider,omitempty"`
	PropertyDependencies map[string][]string    `json:"propertyDependencies,omitempty"`
	CustomTimeouts       *CustomTimeouts        `json:"customTimeouts,omitempty"`
}

type OperationV2 struct {
	Resource ResourceV3 `json:"resource"`
	Type     string     `json:"type"`
}

type DeploymentV3 struct {
	Manifest          ManifestV1          `json:"manifest"`
	SecretsProviders  *SecretsProvidersV1 `json:"secrets_providers,omitempty"`
	Resources         []ResourceV3        `json:"resources,omitempty"`
	PendingOperations []OperationV2       `json:"pending_operations,omitempty"`
	Metadata          SnapshotMetadataV1  `json:"metadata"`
}

type IntegrityErrorV1 struct {
	Version string `json:"version,omitempty"`
	Command string `json:"command,omitempty"`
	Error   string `json:"error,omitempty"`
}

type SnapshotMetadataV1 struct {
	IntegrityError *IntegrityErrorV1 `json:"integrity_error,omitempty"`
}

// Pulumi's JSON marshaller: no HTML escaping, four-space indentation.
func marshal(v interface{}) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func one(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var vc VersionedCheckpoint
	if err := json.Unmarshal(data, &vc); err != nil {
		return err
	}
	var cp CheckpointV3
	if err := json.Unmarshal(vc.Checkpoint, &cp); err != nil {
		return err
	}
	inner, err := json.Marshal(&cp)
	if err != nil {
		return err
	}
	vc.Checkpoint = inner
	out, err := marshal(&vc)
	if err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".json")+".go.json", out, 0o644)
}

func main() {
	for _, p := range os.Args[1:] {
		if err := one(p); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p, err)
			os.Exit(1)
		}
	}
}
