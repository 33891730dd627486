"""``labtest doctor``: watch a running fabric and name the link (or NIC) that is sick.

Layers, each usable alone: :mod:`.evidence` reads every device through the
drivers (one sweep per interval), :mod:`.judge` turns readings into evidence
against the limits profile, :mod:`.change` finds drifts and predicts when a
limit will be crossed, :mod:`.probes` votes over probe paths, :mod:`.localise`
ranks suspects, :mod:`.service` runs it all each interval. See docs/doctor.md.
"""
