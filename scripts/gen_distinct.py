#!/usr/bin/env python3
# The distinct-policy Gateway of issue 21 (docs/plugin-delivery.md): N HTTPRoutes of
# 3 rules over 1,000 hostnames, each with its own RoutePolicy. Writes JSON objects
# separated by `---` lines (valid YAML) to stdout:  scripts/gen_distinct.py 10000 > in.yaml
# tests/e2e/istio/controller.rs builds the same objects in Rust (with sectionName).
# An optional G (scripts/gen_distinct.py 10000 100) spreads the routes over G Gateways,
# edge0..edge{G-1}, route i on edge{i % G}: issue 30's "many Gateways" case.
import json, sys
n = int(sys.argv[1])
gateways = int(sys.argv[2]) if len(sys.argv) > 2 else 0
names = [f"edge{g}" for g in range(gateways)] if gateways else ["edge"]
docs = [
 {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}},
 {"apiVersion":"gateway.networking.k8s.io/v1","kind":"GatewayClass","metadata":{"name":"istio"},"spec":{"controllerName":"istio.io/gateway-controller"}},
] + [
 {"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":name,"namespace":"shop"},"spec":{"gatewayClassName":"istio","listeners":[{"name":"http","protocol":"HTTP","port":80}]}}
 for name in names
]
for i in range(n):
    docs.append({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":f"r{i}","namespace":"shop"},
     "spec":{"parentRefs":[{"name":names[i % len(names)]}],"hostnames":[f"h{i%1000}.example.com"],"rules":[
       {"matches":[{"path":{"type":"PathPrefix","value":f"/r{i}/a"}}],"backendRefs":[{"name":"up","port":80}]},
       {"matches":[{"path":{"type":"PathPrefix","value":f"/r{i}/b"}}],"backendRefs":[{"name":"up","port":80}]},
       {"matches":[{"path":{"type":"PathPrefix","value":f"/r{i}/c"}}],"backendRefs":[{"name":"up","port":80}]}]}})
    docs.append({"apiVersion":"policy.attache.dev/v1alpha1","kind":"RoutePolicy","metadata":{"name":f"p{i}","namespace":"shop"},
     "spec":{"targetRefs":[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":f"r{i}"}],
       "defaults":{"timeouts":{"request":f"{1000+i}ms"},"retry":{"attempts":2,"codes":[503]},
         "requestHeaderModifier":{"set":[{"name":"x-tenant","value":f"t{i}"}]}}}})
print("\n---\n".join(json.dumps(d) for d in docs))
