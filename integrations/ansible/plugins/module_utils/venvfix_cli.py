# -*- coding: utf-8 -*-
# Shared by the venvfix modules: the option spec of venvfix's global options, the command line
# they map to, and one call of the binary that returns its JSON document. No decisions live
# here: venvfix decides, these helpers only translate.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

# Exit codes of docs/cli.md ("Exit codes").
EXIT_OK = 0
EXIT_PROBLEMS = 3
EXIT_NETWORK = 4
EXIT_ROLLED_BACK = 5
EXIT_LOCKED = 6
EXIT_DRIFT = 7

# What each failing exit code means, said in the module's failure message.
EXIT_MEANINGS = {
    1: "venvfix failed",
    2: "bad usage or input",
    EXIT_NETWORK: "network, index or download failure; nothing in the venv changed",
    EXIT_ROLLED_BACK: "verification failed and the transaction was rolled back",
    EXIT_LOCKED: "the venv is locked by another venvfix, or an unfinished transaction needs "
                 "'venvfix recover'",
    EXIT_DRIFT: "the plan no longer matches the venv (drift); nothing was moved",
}


def common_argument_spec():
    """The options every module takes: the binary, the venv, the loader view, the manifests."""
    return dict(
        venv=dict(type='path', required=True),
        venvfix_path=dict(type='path', default='venvfix'),
        ld_cache=dict(type='str'),
        manifests=dict(type='path'),
    )


def index_argument_spec():
    """venvfix's global options for the indexes and downloads (plan and apply read them)."""
    return dict(
        index_url=dict(type='str'),
        extra_index_urls=dict(type='list', elements='str'),
        find_links=dict(type='list', elements='str'),
        offline=dict(type='bool', default=False),
        timeout=dict(type='int'),
        cache_dir=dict(type='path'),
        cert=dict(type='path'),
    )


def binary(module):
    """The venvfix executable: venvfix_path as given when it names a file, else found on PATH."""
    path = module.params['venvfix_path']
    if '/' in path:
        return path
    return module.get_bin_path(path, required=True)


def global_args(module):
    """venvfix [GLOBAL OPTIONS] --json, from the module's parameters (those it has)."""
    p = module.params
    args = [binary(module), '--json', '--venv', p['venv']]
    if p.get('index_url'):
        args += ['--index-url', p['index_url']]
    for url in p.get('extra_index_urls') or []:
        args += ['--extra-index-url', url]
    for link in p.get('find_links') or []:
        args += ['--find-links', link]
    if p.get('offline'):
        args.append('--offline')
    if p.get('timeout') is not None:
        args += ['--timeout', str(p['timeout'])]
    for option, name in (('--cache-dir', 'cache_dir'), ('--cert', 'cert'),
                         ('--ld-cache', 'ld_cache'), ('--manifests', 'manifests')):
        if p.get(name):
            args += [option, p[name]]
    return args


def run(module, args):
    """Runs venvfix; returns (exit code, the JSON document or None, stderr)."""
    rc, out, err = module.run_command(args)
    try:
        document = json.loads(out) if out.strip() else None
    except ValueError:
        document = None
    return rc, document, err


def fail(module, rc, document, err, **extra):
    """Fails the task with venvfix's own sentence (venvfix-error/1) and what its exit code means."""
    sentence = ''
    if isinstance(document, dict) and document.get('schema') == 'venvfix-error/1':
        sentence = document.get('error', '')
    if not sentence:
        lines = [line for line in (err or '').splitlines() if line.strip()]
        sentence = lines[-1] if lines else 'no output'
    meaning = EXIT_MEANINGS.get(rc, 'unexpected exit code')
    module.fail_json(msg='venvfix exited %d (%s): %s' % (rc, meaning, sentence),
                     exit_code=rc, error=sentence, stderr=err, **extra)
