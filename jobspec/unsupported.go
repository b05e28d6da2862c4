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
const (
	consulInstead = "Consul; instead, register services with provider \"nomad\" (Drover's own service catalog) and read them in templates with nomadService"
	vaultInstead  = "Vault; instead, keep secrets in Drover's variables and read them in templates with nomadVar (the task's workload identity grants access)"
)

var unsupportedFeatures = map[string]string{
	"logconfig.enabled":            "the deprecated enabled argument of the logs block (use disabled)",
	"volumerequest.accessmode":     "access_mode (CSI volumes; host volumes only)",
	"volumerequest.attachmentmode": "attachment_mode (CSI volumes; host volumes only)",
	"volumerequest.mountoptions":   "mount_options (CSI volumes; host volumes only)",
	"volumerequest.peralloc":       "per_alloc volumes (CSI volumes; host volumes only)",
	"volumerequest.sticky":         "sticky volumes (dynamic host and CSI volumes)",
	"volumemount.propagationmode":  "mount propagation modes other than private",
	"volumemount.selinuxlabel":     "SELinux labels on volume mounts",

	"job.multiregion":     "multiregion jobs",
	"job.ui":              "the ui block",
	"job.consulnamespace": consulInstead,
	"job.vaultnamespace":  vaultInstead,
	"job.vaulttoken":      vaultInstead,
	"job.consultoken":     consulInstead,
	"job.nomadtokenid":    "ACL tokens",
	"job.versiontag":      "job version tags",

	"taskgroup.maxrunduration":          "max_run_duration",
	"taskgroup.consul":                  consulInstead,
	"taskgroup.vault":                   vaultInstead,
	"taskgroup.preventrescheduleonlost": "prevent_reschedule_on_lost",

	"task.vault":           vaultInstead,
	"task.consul":          consulInstead,
	"task.csipluginconfig": "CSI plugins; instead, mount a directory of the node with a client host_volume and a group volume block of type \"host\"",
	"task.kind":            "task kinds (Consul Connect)",
	"task.scalingpolicies": "task scaling policies",
	"task.secrets":         "secret blocks",
	"task.identities":      "named workload identities (only the default identity block, whose token lets the task read Drover's variables and services)",
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

	"resources.devices":   "devices; instead, place tasks on nodes with the hardware through constraints on node attributes or meta",
	"resources.numa":      "NUMA-aware scheduling",
	"resources.secretsmb": "the secrets size",
	"resources.iops":      "IOPS",

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
