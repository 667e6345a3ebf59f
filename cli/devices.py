"""``ovpool devices [--json]``: the OpenVINO devices present and the numpy backend."""

from __future__ import annotations

import typer

from ovpool.cli.helptext import command

OUTPUTS = "the list on stdout (--json: one JSON object); nothing is written."


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS)
    def devices(
        as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of text."),
    ) -> None:
        """List the devices `ovpool run --device` accepts (OpenVINO's, then numpy)."""
        import json

        from ovpool.execution.devices import list_devices, openvino_status

        found = list_devices()
        if as_json:
            payload = {
                "openvino": openvino_status(),
                "devices": [
                    {"name": d.name, "backend": d.backend, "full_name": d.full_name, "capabilities": dict(d.capabilities)}
                    for d in found
                ],
            }
            typer.echo(json.dumps(payload, indent=2))
            return
        typer.echo(openvino_status())
        for device in found:
            typer.echo(f"{device.name:<8} {device.full_name}  [{device.backend}]")
            for key, value in device.capabilities:
                typer.echo(f"{'':<8}   {key}: {value}")
