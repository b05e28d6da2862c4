package client

import (
	"maps"
	"sort"
)

// driverHealthLoop fingerprints the drivers again every
// DriverFingerprintInterval (a docker daemon may start or stop after the
// client) and has registerLoop register the node again when what they
// report changed: detection, health or attributes. Placement sees a driver
// only while it is detected and healthy.
func (c *Client) driverHealthLoop() {
	for c.sleep(c.cfg.DriverFingerprintInterval) {
		if c.refreshDrivers() {
			c.nodeUpdated()
		}
	}
}

// refreshDrivers fingerprints every driver and updates the node; it
// reports whether anything the servers see changed.
func (c *Client) refreshDrivers() bool {
	names := make([]string, 0, len(c.drivers))
	for name := range c.drivers {
		names = append(names, name)
	}
	sort.Strings(names)
	changed := false
	for _, name := range names {
		info := c.drivers[name].Fingerprint()
		c.nodeMu.Lock()
		old := c.node.Drivers[name]
		if old == nil || old.Detected != info.Detected || old.Healthy != info.Healthy ||
			old.HealthDescription != info.HealthDescription || !maps.Equal(old.Attributes, info.Attributes) {
			changed = true
			if old != nil {
				for k := range old.Attributes {
					delete(c.node.Attributes, k)
				}
			}
			for k, v := range info.Attributes {
				c.node.Attributes[k] = v
			}
			c.node.Drivers[name] = info
			c.node.ComputeClass()
			c.logger.Info("driver state changed", "driver", name, "detected", info.Detected,
				"healthy", info.Healthy, "description", info.HealthDescription)
		}
		c.nodeMu.Unlock()
	}
	return changed
}
