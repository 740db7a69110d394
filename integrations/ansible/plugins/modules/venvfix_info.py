#!/usr/bin/python
# -*- coding: utf-8 -*-
# venvfix_info: `venvfix doctor --json` as a task result. Never changes anything.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: venvfix_info
short_description: Report the health of a Python venv's native libraries with venvfix doctor
version_added: "0.1.0"
description:
  - Runs C(venvfix doctor --json) on the managed host and returns its C(venvfix-doctor/1)
    document, with its C(findings), C(targets) and C(summary) at the top level of the result.
  - Reads the venv only; the task is never C(changed). Runs in check mode as in a real run.
  - A venv with problems is a successful task with C(healthy=false); only a venvfix error
    (not a venv, a lock, bad usage) fails the task.
  - Holds no logic of its own; every decision is venvfix's (see docs/cli.md and docs/doctor.md
    in the venvfix sources).
options:
  venv:
    description: The virtual environment to inspect (C(--venv)).
    type: path
    required: true
  venvfix_path:
    description: The venvfix binary; a name without C(/) is looked up on C(PATH).
    type: path
    default: venvfix
  targets:
    description:
      - Distributions whose libraries must load (C(--target), repeatable).
      - Default, as venvfix decides, torch when installed.
    type: list
    elements: str
  probe:
    description: Also import the target in the venv's own interpreter (C(--probe)).
    type: bool
    default: false
  probe_cmd:
    description: The Python statement the probe runs instead of C(import torch); implies I(probe).
    type: str
  strict:
    description: Rate warnings as problems (C(--strict)), so C(healthy) is false on a warning too.
    type: bool
    default: false
  verify_hashes:
    description: Check the sha256 of every file against its RECORD (C(--verify-hashes)).
    type: bool
    default: false
  ld_cache:
    description:
      - Resolve with this loader cache instead of C(/etc/ld.so.cache) (C(--ld-cache));
        C(none) for no cache at all.
    type: str
  manifests:
    description: Directory of venvfix's data manifests (C(--manifests)).
    type: path
notes:
  - Info modules return their results directly rather than as C(ansible_facts); use
    C(register) to keep them.
  - Supports check mode; it changes nothing in either mode.
seealso:
  - module: venvfix.venvfix.venvfix
author:
  - venvfix developers (!UNKNOWN)
'''

EXAMPLES = r'''
- name: Inspect the training venv
  venvfix.venvfix.venvfix_info:
    venv: /opt/train/.venv
    probe: true
  register: venv_health

- name: Show what is broken
  ansible.builtin.debug:
    msg: "{{ venv_health.findings | selectattr('severity', 'equalto', 'problem') | map(attribute='message') | list }}"
  when: not venv_health.healthy
'''

RETURN = r'''
healthy:
  description: True when venvfix doctor exits 0 (no problem; with I(strict), no warning either).
  returned: always
  type: bool
  sample: false
exit_code:
  description: venvfix's exit code (0 healthy, 3 problems found).
  returned: always
  type: int
  sample: 3
findings:
  description: The findings of the doctor document (kinds and fields in docs/doctor.md).
  returned: success
  type: list
  elements: dict
  sample: [{"kind": "ghost-files", "dist": "nvidia-cudnn-cu12", "severity": "problem"}]
targets:
  description: The distributions whose libraries were checked.
  returned: success
  type: list
  elements: str
  sample: ["torch"]
summary:
  description: Counts of problems, warnings and distributions.
  returned: success
  type: dict
  sample: {"problems": 2, "warnings": 1, "distributions": 24}
doctor:
  description: The whole C(venvfix-doctor/1) document.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.venvfix.venvfix.plugins.module_utils import venvfix_cli


def main():
    spec = venvfix_cli.common_argument_spec()
    spec.update(
        targets=dict(type='list', elements='str'),
        probe=dict(type='bool', default=False),
        probe_cmd=dict(type='str'),
        strict=dict(type='bool', default=False),
        verify_hashes=dict(type='bool', default=False),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params

    args = venvfix_cli.global_args(module) + ['doctor']
    for target in p['targets'] or []:
        args += ['--target', target]
    if p['probe']:
        args.append('--probe')
    if p['probe_cmd']:
        args += ['--probe-cmd', p['probe_cmd']]
    if p['strict']:
        args.append('--strict')
    if p['verify_hashes']:
        args.append('--verify-hashes')

    rc, document, err = venvfix_cli.run(module, args)
    if rc not in (venvfix_cli.EXIT_OK, venvfix_cli.EXIT_PROBLEMS) or not isinstance(document, dict) \
            or document.get('schema') != 'venvfix-doctor/1':
        venvfix_cli.fail(module, rc, document, err, changed=False)
    module.exit_json(changed=False, healthy=rc == venvfix_cli.EXIT_OK, exit_code=rc,
                     findings=document.get('findings', []), targets=document.get('targets', []),
                     summary=document.get('summary', {}), doctor=document)


if __name__ == '__main__':
    main()
