-- One database per service: each deploys and migrates on its own.
CREATE DATABASE marketplace;
CREATE DATABASE logtracker;
