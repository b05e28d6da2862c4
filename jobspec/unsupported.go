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
	"job.update":          "the update block (rolling updates, canaries and deployments)",
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
	"taskgroup.update":                    "the update block (rolling updates, canaries and deployments)",
	"taskgroup.networks":                  "group networks (the network block)",
	"taskgroup.services":                  "services",
	"taskgroup.shutdowndelay":             "shutdown_delay",
	"taskgroup.maxrunduration":            "max_run_duration",
	"taskgroup.stopafterclientdisconnect": "stop_after_client_disconnect",
	"taskgroup.maxclientdisconnect":       "max_client_disconnect",
	"taskgroup.scaling":                   "the scaling block",
	"taskgroup.consul":                    "Consul",
	"taskgroup.vault":                     "Vault",
	"taskgroup.preventrescheduleonlost":   "prevent_reschedule_on_lost",

	"task.lifecycle":       "task lifecycle hooks",
	"task.affinities":      "affinity blocks",
	"task.services":        "services",
	"task.restartpolicy":   "a task's own restart block (use the group's)",
	"task.logconfig":       "the logs block",
	"task.artifacts":       "artifacts",
	"task.vault":           "Vault",
	"task.consul":          "Consul",
	"task.templates":       "templates",
	"task.volumemounts":    "volume mounts",
	"task.csipluginconfig": "CSI plugins",
	"task.shutdowndelay":   "shutdown_delay",
	"task.kind":            "task kinds (Consul Connect)",
	"task.scalingpolicies": "task scaling policies",
	"task.secrets":         "secret blocks",
	"task.identity":        "workload identities",
	"task.identities":      "workload identities",
	"task.actions":         "task actions",
	"task.schedule":        "task schedules",

	"resources.memorymaxmb": "memory_max (memory oversubscription)",
	"resources.networks":    "task networks (use the group's network block)",
	"resources.devices":     "devices",
	"resources.numa":        "NUMA-aware scheduling",
	"resources.secretsmb":   "the secrets size",
	"resources.iops":        "IOPS",

	"restartpolicy.rendertemplates": "render_templates (templates)",

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
