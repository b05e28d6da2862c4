package jobspec

import (
	"reflect"
	"strings"
)

// unsupportedPrefix starts every message about a field Drover does not act
// on, in the JSON job and in HCL files alike.
const unsupportedPrefix = "Drover does not support "

// unsupportedFeatures names, for the fields of Nomad's API job that Drover
// does not model, the feature each asks for. The key is Drover's type
// (the object holding the field) and the field's name, in lower case.
var unsupportedFeatures = map[string]string{
	"job.multiregion":     "multiregion jobs",
	"job.spreads":         "spread blocks",
	"job.affinities":      "affinity blocks",
	"job.nodepool":        "node pools",
	"job.ui":              "the ui block",
	"job.consulnamespace": "Consul",
	"job.vaultnamespace":  "Vault",
	"job.vaulttoken":      "Vault",
	"job.consultoken":     "Consul",
	"job.nomadtokenid":    "ACL tokens",
	"job.versiontag":      "job version tags",

	"taskgroup.affinities":                "affinity blocks",
	"taskgroup.spreads":                   "spread blocks",
	"taskgroup.volumes":                   "volumes",
	"taskgroup.disconnect":                "the disconnect block",
	"taskgroup.ephemeraldisk":             "the ephemeral_disk block",
	"taskgroup.shutdowndelay":             "shutdown_delay",
	"taskgroup.maxrunduration":            "max_run_duration",
	"taskgroup.stopafterclientdisconnect": "stop_after_client_disconnect",
	"taskgroup.maxclientdisconnect":       "max_client_disconnect",
	"taskgroup.consul":                    "Consul",
	"taskgroup.vault":                     "Vault",
	"taskgroup.preventrescheduleonlost":   "prevent_reschedule_on_lost",

	"task.affinities":      "affinity blocks",
	"task.restartpolicy":   "a task's own restart block (use the group's)",
	"task.logconfig":       "the logs block",
	"task.artifacts":       "artifacts",
	"task.vault":           "Vault",
	"task.consul":          "Consul",
	"task.volumemounts":    "volume mounts",
	"task.csipluginconfig": "CSI plugins",
	"task.shutdowndelay":   "shutdown_delay",
	"task.kind":            "task kinds (Consul Connect)",
	"task.scalingpolicies": "task scaling policies",
	"task.secrets":         "secret blocks",
	"task.identities":      "named workload identities (only the default identity block)",
	"task.actions":         "task actions",
	"task.schedule":        "task schedules",

	"service.canarytags":        "canary tags (canaries and deployments)",
	"service.canarymeta":        "canary meta (canaries and deployments)",
	"service.enabletagoverride": "enable_tag_override (Consul)",
	"service.taggedaddresses":   "tagged_addresses (Consul)",
	"service.connect":           "Consul Connect",
	"service.identity":          "workload identities",
	"service.weights":           "service weights (Consul)",
	"service.cluster":           "Consul clusters",
	"service.kind":              "Consul service kinds",

	"servicecheck.expose":                "expose (Consul Connect)",
	"servicecheck.advertise":             "advertise (Consul)",
	"servicecheck.notes":                 "check notes (Consul)",
	"servicecheck.tlsservername":         "tls_server_name (Consul checks)",
	"servicecheck.grpcservice":           "grpc checks (Consul)",
	"servicecheck.grpcusetls":            "grpc checks (Consul)",
	"servicecheck.failuresbeforewarning": "failures_before_warning (Consul checks)",

	"resources.memorymaxmb": "memory_max (memory oversubscription)",
	"resources.devices":     "devices",
	"resources.numa":        "NUMA-aware scheduling",
	"resources.secretsmb":   "the secrets size",
	"resources.iops":        "IOPS",

	"template.vaultgrace":           "vault_grace (Vault)",
	"template.once":                 "templates that render only once (once)",
	"changescript.runonfirstrender": "run_on_first_render in change_script",

	"workloadidentity.audience":     "identity audiences (aud)",
	"workloadidentity.changemode":   "identity change_mode (identities are not renewed)",
	"workloadidentity.changesignal": "identity change_signal (identities are not renewed)",
	"workloadidentity.filepath":     "identity filepath (the file is secrets/nomad_token)",
	"workloadidentity.servicename":  "service identities",
	"workloadidentity.ttl":          "identity TTLs (identities are not renewed)",
	"workloadidentity.extraclaims":  "extra identity claims",

	"networkresource.cni":  "CNI networks (the cni block)",
	"port.ignorecollision": "ignore_collision (ports shared between allocations)",

	"scalingpolicy.id":          "setting a scaling policy's ID (the servers own it)",
	"scalingpolicy.namespace":   "setting a scaling policy's namespace (it is the job's)",
	"scalingpolicy.target":      "setting a scaling policy's target (it is its group)",
	"scalingpolicy.createindex": "setting a scaling policy's indexes (the servers own them)",
	"scalingpolicy.modifyindex": "setting a scaling policy's indexes (the servers own them)",

	"jobregisterhttprequest.preservecounts":    "keeping the running counts on job run (-preserve-counts)",
	"jobregisterhttprequest.preserveresources": "keeping the running resources on job run (-preserve-resources)",
	"jobregisterhttprequest.evalpriority":      "evaluation priorities (-eval-priority)",
}

// unsupportedMessage is the message for key, a field of the object of
// Drover type t that Drover does not model.
func unsupportedMessage(t reflect.Type, key string) string {
	if feature, ok := unsupportedFeatures[strings.ToLower(t.Name()+"."+key)]; ok {
		return unsupportedPrefix + feature
	}
	return unsupportedPrefix + "this field"
}
