#!/usr/bin/python
# -*- coding: utf-8 -*-
# venvfix: make a venv's native libraries healthy (plan, then apply as one transaction), or roll
# it back to a snapshot. Arguments map to venvfix options, exit codes to task results.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: venvfix
short_description: Repair a Python venv's native (CUDA) libraries with venvfix, or roll it back
version_added: "0.1.0"
description:
  - With I(state=healthy), runs C(venvfix plan --json) and, when the plan has actions,
    C(venvfix apply PLAN --yes --json) (with C(--snapshot) when I(snapshot=true)). The repair
    is one journaled transaction that is verified (every library loads, the target imports)
    and rolled back when it is not.
  - With I(plan), applies that plan file (from C(venvfix plan -o) or I(plan_output)) instead of
    planning now; venvfix refuses it (exit 7) when the venv changed since it was made.
  - With I(state=rolled_back), restores snapshot I(snapshot) (C(venvfix rollback ID --json)).
  - "Check mode runs C(venvfix plan) only: C(changed) is true exactly when the plan has
    actions, so a healthy venv is never reported as changed (unlike C(ansible.builtin.pip),
    whose check mode reports changes it cannot know, ansible/ansible#62826)."
  - "A reinstall at the same version is a change: venvfix plans from the files on disk, not
    from version numbers, so a distribution listed by pip whose libraries are gone is
    reinstalled and reported (C(ansible.builtin.pip) sees nothing to do there, because the
    version is already installed, ansible/ansible#81751)."
  - The module holds no logic of its own beyond mapping these options to venvfix's and its
    exit codes to task results (docs/cli.md in the venvfix sources is the reference).
options:
  venv:
    description: The virtual environment (C(--venv)).
    type: path
    required: true
  state:
    description:
      - C(healthy) plans and applies a repair; C(rolled_back) restores I(snapshot).
    type: str
    choices: [healthy, rolled_back]
    default: healthy
  snapshot:
    description:
      - With I(state=healthy), a boolean; true keeps what the repair replaced as a snapshot
        that I(state=rolled_back) restores (C(apply --snapshot)).
      - With I(state=rolled_back), the snapshot id to restore (required), as returned in
        C(snapshot) by a repair or listed by C(venvfix snapshot list).
    type: raw
    default: false
  targets:
    description:
      - Distributions whose libraries must load (C(plan --target), repeatable); default as
        venvfix decides (torch when installed). Not with I(plan), which names its own.
    type: list
    elements: str
  remove_foreign_cuda:
    description: Also remove distributions of another CUDA major than the targets' (C(plan --remove-foreign-cuda)).
    type: bool
    default: false
  plan:
    description:
      - A plan file on the managed host to apply instead of planning now. It applies only
        while the venv is in the state it was made for; after it was applied, or after any
        other change, venvfix refuses it with exit 7 (a saved plan is used once).
    type: path
  plan_output:
    description:
      - Also write the plan made now to this file on the managed host (C(plan -o)), in check
        mode too (the venv is never touched), so that a later run applies exactly the
        reviewed plan with I(plan).
    type: path
  wait:
    description: Wait for another venvfix's lock instead of failing (C(--wait)).
    type: bool
    default: false
  verify_cmd:
    description: A shell command run in the activated venv after the move; its failure rolls the repair back (C(--verify-cmd)).
    type: str
  probe:
    description: Import the target in the venv's interpreter as the last verification step (false is C(--no-probe)).
    type: bool
    default: true
  probe_cmd:
    description: The Python statement that step runs instead of C(import torch) (C(--probe-cmd)).
    type: str
  index_url:
    description: The PEP 503/691 index; replaces the environment's index and extra indexes (C(--index-url)).
    type: str
  extra_index_urls:
    description: More indexes (C(--extra-index-url), repeatable).
    type: list
    elements: str
  find_links:
    description:
      - Flat directories or pages of wheels (C(--find-links), repeatable).
      - With I(plan), the plan's wheels that these list are fetched from here (a wheelhouse
        written by C(venvfix fetch PLAN --dest DIR)); the plan's sha256 decides.
    type: list
    elements: str
  offline:
    description: Never touch an index; wheels come from the cache and I(find_links), which are read even over http (C(--offline)).
    type: bool
    default: false
  timeout:
    description: Seconds after which a stalled connection is given up (C(--timeout)).
    type: int
  cache_dir:
    description: venvfix's download cache (C(--cache-dir)).
    type: path
  cert:
    description: CA bundle for TLS (C(--cert)).
    type: path
  ld_cache:
    description: Resolve with this loader cache instead of C(/etc/ld.so.cache) (C(--ld-cache)); C(none) for no cache.
    type: str
  manifests:
    description: Directory of venvfix's data manifests (C(--manifests)).
    type: path
  venvfix_path:
    description: The venvfix binary; a name without C(/) is looked up on C(PATH).
    type: path
    default: venvfix
notes:
  - Supports check mode (C(venvfix plan); for I(state=rolled_back), C(venvfix snapshot show))
    and diff mode (each planned action's distribution, version and files, before and after).
  - "Exit codes become results: plan's 3 is C(changed) (would change in check mode); 4
    fails naming the URL; 5 fails with C(rolled_back=true); 6 fails saying the venv is locked
    or needs C(venvfix recover); 7 fails saying the venv drifted from the plan."
seealso:
  - module: venvfix.venvfix.venvfix_info
author:
  - venvfix developers (!UNKNOWN)
'''

EXAMPLES = r'''
- name: Repair the training venv, keeping a snapshot
  venvfix.venvfix.venvfix:
    venv: /opt/train/.venv
    state: healthy
    snapshot: true
    index_url: https://mirror.example.internal/simple
  register: repair

- name: Review first, apply exactly what was reviewed (a host that drifted fails with exit 7)
  venvfix.venvfix.venvfix:
    venv: /opt/train/.venv
    plan_output: /var/tmp/venvfix-plan.json
  check_mode: true

- name: Apply the reviewed plan
  venvfix.venvfix.venvfix:
    venv: /opt/train/.venv
    plan: /var/tmp/venvfix-plan.json
    snapshot: true

- name: Undo the repair
  venvfix.venvfix.venvfix:
    venv: /opt/train/.venv
    state: rolled_back
    snapshot: "{{ repair.snapshot }}"
'''

RETURN = r'''
plan:
  description: The C(venvfix-plan/1) document that was (or, in check mode, would be) applied.
  returned: state is healthy and a plan was made or read
  type: dict
actions:
  description: The plan's actions (install, remove), each with C(dist) and C(version).
  returned: state is healthy and a plan was made or read
  type: list
  elements: dict
snapshot:
  description: The snapshot id the repair kept (null without I(snapshot)), or the one restored.
  returned: a repair was applied, or state is rolled_back
  type: str
  sample: 20261202T013336302Z-3e6a1
verified:
  description: Whether the repair's verification (loads, probe, I(verify_cmd)) passed.
  returned: a repair was applied or rolled back
  type: bool
rolled_back:
  description: True when verification failed and venvfix rolled the repair back (exit 5).
  returned: a repair was applied or rolled back
  type: bool
apply:
  description: The C(venvfix-apply/1) document.
  returned: a repair was applied
  type: dict
undo_snapshot:
  description: The snapshot that undoes the rollback (state=rolled_back).
  returned: state is rolled_back and not check mode
  type: str
exit_code:
  description: The exit code of the last venvfix command run.
  returned: when venvfix ran (not in check mode with I(plan), which only reads the file)
  type: int
error:
  description: venvfix's error sentence (C(venvfix-error/1)).
  returned: failure
  type: str
'''

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.module_utils.six import string_types
from ansible_collections.venvfix.venvfix.plugins.module_utils import venvfix_cli


def plan_diff(plan):
    """Before/after text of a plan's actions: distribution, version and files."""
    missing = {}
    for finding in plan.get('findings', []):
        if finding.get('kind') == 'ghost-files':
            missing[finding.get('dist')] = finding.get('missing', [])
    before, after = [], []
    for action in plan.get('actions', []):
        dist, version = action.get('dist'), action.get('version')
        if action.get('action') == 'remove':
            before.append('%s %s\n' % (dist, version))
            kept = ', '.join(action.get('keep') or [])
            after.append('(removed) %s %s%s\n' % (dist, version, '; keeps ' + kept if kept else ''))
            continue
        replaces = action.get('replaces') or {}
        if replaces:
            before.append('%s %s\n' % (replaces.get('dist'), replaces.get('version')))
            for path in missing.get(replaces.get('dist'), []):
                before.append('  missing %s\n' % path)
        else:
            before.append('(not installed) %s\n' % dist)
        after.append('%s %s from %s (sha256 %s)\n' % (dist, version, action.get('file'),
                                                      action.get('sha256')))
        for soname in action.get('provides') or []:
            after.append('  provides %s\n' % soname)
    header = 'venvfix plan for %s' % plan.get('venv')
    return dict(before=''.join(before), after=''.join(after),
                before_header=header + ' (now)', after_header=header + ' (after apply)')


def read_plan(module, path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError) as error:
        module.fail_json(msg='cannot read the plan %s: %s' % (path, error), exit_code=2)


def make_plan(module, plan_file):
    """venvfix plan --json -o PLAN_FILE; fails the task unless it exits 0 or 3 with a plan."""
    p = module.params
    args = venvfix_cli.global_args(module) + ['plan', '-o', plan_file]
    if p['remove_foreign_cuda']:
        args.append('--remove-foreign-cuda')
    for target in p['targets'] or []:
        args += ['--target', target]
    rc, document, err = venvfix_cli.run(module, args)
    is_plan = isinstance(document, dict) and document.get('schema') == 'venvfix-plan/1'
    if rc not in (venvfix_cli.EXIT_OK, venvfix_cli.EXIT_PROBLEMS) or not is_plan:
        venvfix_cli.fail(module, rc, document, err, changed=False)
    if rc == venvfix_cli.EXIT_PROBLEMS and not document.get('actions'):
        unfixed = [u.get('message', str(u)) for u in document.get('unresolved', [])]
        module.fail_json(msg='venvfix plan found problems that no action fixes: %s'
                         % '; '.join(unfixed or ['see plan.findings']),
                         changed=False, exit_code=rc, plan=document, actions=[])
    return document, rc


def apply_args(module, plan_file):
    p = module.params
    args = venvfix_cli.global_args(module) + ['apply', plan_file, '--yes']
    if boolean(p['snapshot']):
        args.append('--snapshot')
    if p['wait']:
        args.append('--wait')
    if p['verify_cmd']:
        args += ['--verify-cmd', p['verify_cmd']]
    if not p['probe']:
        args.append('--no-probe')
    if p['probe_cmd']:
        args += ['--probe-cmd', p['probe_cmd']]
    return args


def ensure_healthy(module):
    p = module.params
    if p['plan']:
        plan_file = p['plan']
        plan, plan_rc = read_plan(module, plan_file), None
    else:
        plan_file = p['plan_output'] or '%s/venvfix-plan.json' % module.tmpdir
        plan, plan_rc = make_plan(module, plan_file)
    actions = plan.get('actions', [])
    result = dict(plan=plan, actions=actions)
    if plan_rc is not None:
        result['exit_code'] = plan_rc
    if actions and module._diff:
        result['diff'] = plan_diff(plan)
    if module.check_mode or (not actions and not p['plan']):
        module.exit_json(changed=bool(actions), **result)

    rc, document, err = venvfix_cli.run(module, apply_args(module, plan_file))
    if rc != venvfix_cli.EXIT_OK or not isinstance(document, dict) \
            or document.get('schema') != 'venvfix-apply/1':
        result.pop('exit_code', None)  # the failure's exit code is apply's, not plan's
        venvfix_cli.fail(module, rc, document, err, changed=False,
                         rolled_back=rc == venvfix_cli.EXIT_ROLLED_BACK,
                         verified=False, **result)
    verification = document.get('verification') or {}
    result.update(exit_code=rc, apply=document, snapshot=document.get('snapshot'),
                  verified=bool(verification.get('ok', document.get('nothing_to_do'))),
                  rolled_back=False)
    module.exit_json(changed=not document.get('nothing_to_do', False), **result)


def ensure_rolled_back(module):
    snapshot = module.params['snapshot']
    if not isinstance(snapshot, string_types) or snapshot.lower() in ('true', 'false', ''):
        module.fail_json(msg='state=rolled_back needs snapshot: the id of a snapshot to restore')
    base = venvfix_cli.global_args(module)
    if module.check_mode:
        rc, document, err = venvfix_cli.run(module, base + ['snapshot', 'show', snapshot])
        if rc != venvfix_cli.EXIT_OK:
            venvfix_cli.fail(module, rc, document, err, changed=False)
        module.exit_json(changed=True, snapshot=snapshot, exit_code=rc, snapshot_info=document)
    args = base + ['rollback', snapshot] + (['--wait'] if module.params['wait'] else [])
    rc, document, err = venvfix_cli.run(module, args)
    if rc != venvfix_cli.EXIT_OK or not isinstance(document, dict):
        venvfix_cli.fail(module, rc, document, err, changed=False)
    module.exit_json(changed=True, snapshot=document.get('restored', snapshot), exit_code=rc,
                     undo_snapshot=document.get('undo_snapshot'), rollback=document)


def main():
    spec = venvfix_cli.common_argument_spec()
    spec.update(venvfix_cli.index_argument_spec())
    spec.update(
        state=dict(type='str', choices=['healthy', 'rolled_back'], default='healthy'),
        snapshot=dict(type='raw', default=False),
        targets=dict(type='list', elements='str'),
        remove_foreign_cuda=dict(type='bool', default=False),
        plan=dict(type='path'),
        plan_output=dict(type='path'),
        wait=dict(type='bool', default=False),
        verify_cmd=dict(type='str'),
        probe=dict(type='bool', default=True),
        probe_cmd=dict(type='str'),
    )
    module = AnsibleModule(
        argument_spec=spec, supports_check_mode=True,
        mutually_exclusive=[('plan', 'targets'), ('plan', 'remove_foreign_cuda'),
                            ('plan', 'plan_output')])
    if module.params['state'] == 'rolled_back':
        ensure_rolled_back(module)
    try:
        boolean(module.params['snapshot'])
    except TypeError:
        module.fail_json(msg='with state=healthy, snapshot is a boolean (true keeps a snapshot)')
    ensure_healthy(module)


if __name__ == '__main__':
    main()
