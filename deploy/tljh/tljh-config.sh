#!/usr/bin/env bash
# TLJH hub settings for a class of ~200 (untested here: see deploy/README.md). Run as root on
# the server after the installer; edit the names first. Every key is a tljh-config property.
set -euo pipefail
INSTRUCTOR="${INSTRUCTOR:?set INSTRUCTOR to the instructor's hub user name}"
ROSTER="${ROSTER:?set ROSTER to a file with one student user name per line}"
DOMAIN="${DOMAIN:-}"          # e.g. hub.example.edu, for HTTPS
EMAIL="${EMAIL:-}"            # Let's Encrypt contact

tljh-config add-item users.admin "$INSTRUCTOR"
tljh-config add-item users.allowed "$INSTRUCTOR"
while read -r student; do
    [ -n "$student" ] && tljh-config add-item users.allowed "$student"
done < "$ROSTER"

# per-user limits: ~330 MiB measured for a server with one chapter notebook, 1 GiB leaves room
# for a second notebook and the simulators; one core each keeps one student from starving all
tljh-config set limits.memory 1G
tljh-config set limits.cpu 1
tljh-config set user_environment.default_app jupyterlab

# stop servers idle for 30 minutes (checked every 5), so memory follows who is actually working
tljh-config set services.cull.timeout 1800
tljh-config set services.cull.every 300

if [ -n "$DOMAIN" ]; then
    tljh-config set https.enabled true
    tljh-config set https.letsencrypt.email "$EMAIL"
    tljh-config add-item https.letsencrypt.domains "$DOMAIN"
fi
tljh-config reload proxy
tljh-config reload hub
