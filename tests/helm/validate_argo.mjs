// Validate Argo Rollouts objects with @kubernetes-models/argo-rollouts (its JSON schemas, generated from the
// Argo Rollouts Go types). usage: node validate_argo.mjs FILE.json  (a JSON array of objects)
// Prints one JSON line per object: {"kind", "name", "ok", "error"}. Run with NODE_PATH-free resolution from
// .tools/npm (the test copies this file there).
import { readFileSync } from "node:fs";
import * as models from "@kubernetes-models/argo-rollouts/argoproj.io/v1alpha1";

for (const obj of JSON.parse(readFileSync(process.argv[2], "utf8"))) {
  const Model = models[obj.kind];
  const out = { kind: obj.kind, name: obj.metadata?.name ?? null, ok: false, error: null };
  if (!Model) {
    out.error = `no model for kind ${obj.kind}`;
  } else {
    try {
      new Model(obj).validate();
      out.ok = true;
    } catch (e) {
      out.error = e.message;
    }
  }
  console.log(JSON.stringify(out));
}
