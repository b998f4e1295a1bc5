/*
 * tests/deploy/test_deploy.c — the cluster job files in deploy/. No
 * Kubernetes runs here, so the manifests are checked offline against the API
 * schema (tests/deploy/validate_k8s.mjs: the TypeScript types and JSON-schema
 * validation of kubernetes-models, generated from the Kubernetes OpenAPI
 * schema; npm packages pinned in tests/deploy/package-lock.json, installed by
 * tools/install-deps.sh): every document of the manifests in deploy/kubernetes
 * passes,
 * and a copy with an unknown field, a wrong type and a missing required field
 * fails naming each. (The Slurm script runs under a real Slurm in `make
 * test-slurm`, and as Slurm runs it in tests/cluster/test_worker.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "tests/support/support.h"

static void need_checker(void)
{
	if (access("tests/deploy/node_modules/kubernetes-models/package.json", R_OK) != 0)
		fail_msg("tests/deploy/node_modules is missing: tools/install-deps.sh installs it "
		         "(npm ci in tests/deploy)");
}

static void test_deploy__kubernetes_manifests_match_the_api_schema(void **state)
{
	(void)state;
	need_checker();
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "timeout 120 node tests/deploy/validate_k8s.mjs deploy/kubernetes/*.yaml");
	if (rc != 0) fail_msg("deploy/kubernetes: status %d:\n%s%s", rc, out, err);
	print_message("%s", out);
	assert_non_null(strstr(out, "ok deploy/kubernetes/joseki-worker.yaml: Secret"));
	assert_non_null(strstr(out, "ok deploy/kubernetes/joseki-worker.yaml: Deployment"));
	free(out);
	free(err);
}

/* The checker can fail: copies of the manifest with a wrong type and a
 * volume mount without its path, with a misspelt field at the top of the
 * spec, and with one deep in the pod template (the compiler names one type
 * error per document, so each gets its own copy; one run checks them all). */
static void test_deploy__broken_manifests_are_refused_naming_each_problem(void **state)
{
	(void)state;
	need_checker();
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	const char *src = "deploy/kubernetes/joseki-worker.yaml";
	int rc =
	    ts_runf(&out, &err,
	            "sed -e 's/readOnly: true/readOnly: \"yes\"/' -e '/mountPath:/d' %s "
	            ">%s/type.yaml && sed -e 's/^  replicas: /  replicaz: /' %s >%s/top.yaml && "
	            "sed -e 's/imagePullPolicy:/imagePulPolicy:/' %s >%s/deep.yaml && "
	            "timeout 120 node tests/deploy/validate_k8s.mjs %s/type.yaml %s/top.yaml "
	            "%s/deep.yaml",
	            src, dir, src, dir, src, dir, dir, dir, dir);
	print_message("%s", err);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "required property mountPath"));
	assert_non_null(strstr(err, "readOnly"));
	assert_non_null(strstr(err, "'\"replicaz\"' does not exist in type 'IDeploymentSpec'"));
	assert_non_null(strstr(err, "'\"imagePulPolicy\"' does not exist in type 'IContainer'"));
	assert_null(strstr(out, "ok ")); /* nothing passes */
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deploy__kubernetes_manifests_match_the_api_schema),
	    cmocka_unit_test(test_deploy__broken_manifests_are_refused_naming_each_problem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
